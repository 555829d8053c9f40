"""BytePairTokenizer: parity with Hugging Face `tokenizers` set up as RoBERTa's, offsets,
graph ops, SavedModel and config round trips."""

import bisect
import json
import random
import re

import keras
import pytest
import tensorflow as tf

from keras_bert_core.export import (
    graph_op_types,
    saved_model_op_types,
    unsupported_tf_serving_ops,
)
from keras_bert_core.text.byte_pair import pretokenization
from keras_bert_core.text.byte_pair.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_core.text.vocabulary.byte_pair_vocabulary import bytes_to_unicode
from tests.text.fuzz_texts import DATA, as_reference_text, fuzz_texts, tokenizer_corpus

FIXTURE = DATA / "bpe"
VOCAB_FILE = str(FIXTURE / "vocab.json")
MERGES_FILE = str(FIXTURE / "merges.txt")
# Beyond the corpus: contractions, numbers, punctuation runs, whitespace runs of every kind
# before words, contractions and ends, empty and blank lines.
EXTRA_LINES = [
    "don't", "I'll", "'s", "He's here; they're, we've, I'm, you'd, she'll", "'S 'T 'LL",
    "  's", " 's", "\t's", "x  'sa", "''s", "'''", "it's's", "rock'n'roll",
    "12345 3.14 1,000,000 -42 1e10 ½ ² ٣ ४२", "!!! ?!... --- ((x)) **kw** <s> </s> <mask>",
    "", " ", "  ", "\t", "\n", "\n\n", " \n ", "  leading", "trailing   ", "a  b   c    d",
    "\t\tx\n\ny\r\nz", " \u3000y", "\u3000\u3000y", "x\u00a0\u00a0 y", "x\u2028\u2029 z",
    "x \u0085y", "a\x0b\x0cb", "a\x1c\x1fb\x7f c \x1c d",
    "tab\tthen  \t  mixed \u2003 spaces", "end with newline\n",
    "NUL\x00inside \x00\x00 text\x00", "\x01\x00\x01",
    "emoji 👍🏽 👨‍👩‍👧 🇫🇷!", "漢字 かな カナ 한국어",
    "e\u0301 café naïve Ωμέγα", "x" * 300, " " + "word" * 80 + "  ",
]  # fmt: skip


def reference_tokenizer():
    """`tokenizers` as RoBERTa's tokenizer.json sets it up, on the fixture's files."""
    tokenizers = pytest.importorskip("tokenizers", reason="reference tokenizer for parity")
    reference = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(VOCAB_FILE, MERGES_FILE))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(
        add_prefix_space=False, trim_offsets=True, use_regex=True)
    reference.decoder = tokenizers.decoders.ByteLevel()
    reference.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
    return reference


@pytest.fixture(scope="module")
def reference():
    return reference_tokenizer()


@pytest.fixture(scope="module")
def tokenizer():
    return BytePairTokenizer(VOCAB_FILE, MERGES_FILE)


@pytest.fixture(scope="module")
def tokenize(tokenizer):
    """`tokenize_with_offsets` traced once, as an export traces it."""
    return tf.function(tokenizer.tokenize_with_offsets,
                       input_signature=[tf.TensorSpec([None], tf.string)])


def batched(tokenize, lines, batch_size=512):
    """`(ids, starts, ends)` of each line."""
    out = []
    for i in range(0, len(lines), batch_size):
        ids, starts, ends = tokenize(tf.constant(lines[i : i + batch_size]))
        out.extend(zip(ids.to_list(), starts.to_list(), ends.to_list(), strict=True))
    return out


def char_offsets(text, byte_starts, byte_ends):
    """The reference's character offsets for our byte offsets: the characters that hold the
    span's bytes (an empty span: the characters before it)."""
    data = text.encode("utf-8")
    char_starts = [i for i, byte in enumerate(data) if byte & 0xC0 != 0x80]

    def start(b):
        return len(char_starts) if b >= len(data) else bisect.bisect_right(char_starts, b) - 1

    return [(start(s) if s < e else bisect.bisect_left(char_starts, s),
             bisect.bisect_left(char_starts, e))
            for s, e in zip(byte_starts, byte_ends, strict=True)]


def assert_parity(tokenize, reference, lines):
    ours = batched(tokenize, lines)
    theirs = reference.encode_batch(lines, add_special_tokens=False)
    id_mismatches = [(line, ids, t.ids)
                     for line, (ids, _, _), t in zip(lines, ours, theirs, strict=True)
                     if ids != t.ids]
    assert not id_mismatches, f"{len(id_mismatches)} of {len(lines)} differ: {id_mismatches[:3]}"
    offset_mismatches = [(line, char_offsets(line, starts, ends), t.offsets)
                         for line, (_, starts, ends), t in zip(lines, ours, theirs, strict=True)
                         if char_offsets(line, starts, ends) != t.offsets]
    assert not offset_mismatches, (f"{len(offset_mismatches)} of {len(lines)} differ: "
                                   f"{offset_mismatches[:3]}")


def test_ids_and_offsets_match_the_reference_on_the_corpus(tokenize, reference):
    lines = tokenizer_corpus() + EXTRA_LINES
    assert len(lines) > 5000
    assert_parity(tokenize, reference, lines)


def test_ids_and_offsets_match_the_reference_on_fuzz_and_every_character_class(
        tokenize, reference):
    """Fuzz lines, and code points of every class in the contexts that tell the classes
    apart: the whitespace set, the letters and digits that RE2's tables lack, a sample."""
    rng = random.Random(0)
    sample = rng.sample([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF], 3000)
    newer = [int(h, 16) for h in re.findall(
        r"x\{([0-9a-f]+)\}", pretokenization._NEWER_LETTERS + pretokenization._NEWER_NUMBERS)]
    whitespace = [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                  0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0x180E, 0x200B, 0x1C, 0x1F, 0xFEFF]
    lines = [as_reference_text(t) for t in fuzz_texts(300, seed=21)]
    for c in sample + newer + whitespace:
        c = chr(c)
        lines.append(f"a{c}b 1{c}2 !{c}? {c}{c}x x{c}{c} {c} 's{c}{c}'s {c}")
    assert_parity(tokenize, reference, lines)


def test_offsets_hold_each_tokens_bytes_less_its_spaces(tokenizer, tokenize):
    lines = tokenizer_corpus()[::5] + EXTRA_LINES
    byte_of = {symbol: byte for byte, symbol in bytes_to_unicode().items()}
    token_bytes = {i: bytes(byte_of[c] for c in t) for t, i in tokenizer.vocabulary.items()
                   if all(c in byte_of for c in t)}
    spans_checked = 0
    for line, (ids, starts, ends) in zip(lines, batched(tokenize, lines), strict=True):
        data = line.encode("utf-8")
        for token_id, start, end in zip(ids, starts, ends, strict=True):
            assert data[start:end] == token_bytes[token_id].strip(b" ")
            spans_checked += 1
        assert b"".join(token_bytes[i] for i in ids) == data
    assert spans_checked > 40_000


def test_any_bytes_detokenize_back(tokenizer):
    """Byte-level: every input, invalid UTF-8 and NUL bytes included, comes back whole."""
    texts = fuzz_texts(200, seed=5) + [b"\xff\xfe\x00\x80 \xc3", b"\x00", b""]
    ids = tokenizer(tf.constant(texts))
    assert tokenizer.detokenize(ids).numpy().tolist() == texts
    assert tokenizer.detokenize(ids.to_tensor(tokenizer.pad_id))[0].numpy().startswith(
        texts[0])


def test_single_string_and_special_ids(tokenizer, reference):
    ids = tokenizer("Hello world")
    assert isinstance(ids, tf.Tensor) and ids.dtype == tf.int32
    assert ids.numpy().tolist() == reference.encode("Hello world", add_special_tokens=False).ids
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id, tokenizer.unk_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    assert tokenizer.id_to_token(tokenizer.token_to_id("Ġthe")) == "Ġthe"
    assert tokenizer.vocabulary_size() == 2000
    with pytest.raises(ValueError, match="batch"):
        tokenizer.tokenize_with_offsets("one string")
    with pytest.raises(KeyError):
        tokenizer.token_to_id("not a token")


def test_graph_holds_only_tf_serving_ops(tokenize):
    concrete = tokenize.get_concrete_function()
    ops = graph_op_types(concrete)
    assert "RegexSplitWithOffsets" in ops
    assert unsupported_tf_serving_ops(ops) == set()


def test_saved_model_round_trip(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda text: tokenizer(text).to_tensor(tokenizer.pad_id),
        input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path))
    assert unsupported_tf_serving_ops(saved_model_op_types(str(tmp_path))) == set()
    loaded = tf.saved_model.load(str(tmp_path))
    texts = tf.constant(EXTRA_LINES)
    assert loaded.tokenize(texts).numpy().tolist() == module.tokenize(texts).numpy().tolist()


def test_config_round_trip_and_in_memory_inputs(tokenizer):
    texts = tf.constant(tokenizer_corpus()[:200] + EXTRA_LINES)
    expected = tokenizer(texts).to_list()
    restored = keras.layers.deserialize(
        json.loads(json.dumps(keras.layers.serialize(tokenizer))))
    assert isinstance(restored, BytePairTokenizer)
    assert restored(texts).to_list() == expected
    with open(VOCAB_FILE, encoding="utf-8") as f:
        vocab = json.load(f)
    with open(MERGES_FILE, encoding="utf-8") as f:
        pairs = [tuple(line.split()) for line in f.read().splitlines()[1:]]
    assert BytePairTokenizer(vocab, pairs)(texts).to_list() == expected


def test_merge_order_and_overlapping_pairs():
    """Lowest rank first in every word; a run of equal symbols pairs from the left."""
    symbols = bytes_to_unicode()
    vocab = {symbols[b]: b for b in range(256)}
    merges = ["a a", "aa aa", "b c", "a b"]
    for merge in merges:
        vocab[merge.replace(" ", "")] = len(vocab)
    tokenizer = BytePairTokenizer(vocab, merges)
    words = ["aaaaa", "aaa", "abc", "aab", "aaaaaaaab"]
    tokens = [[tokenizer.id_to_token(i) for i in row] for row in tokenizer(words).to_list()]
    assert tokens == [["aaaa", "a"], ["aa", "a"], ["a", "bc"], ["aa", "b"],
                      ["aaaa", "aaaa", "b"]]
    tokenizers = pytest.importorskip("tokenizers", reason="reference tokenizer for parity")
    reference = tokenizers.Tokenizer(tokenizers.models.BPE(
        vocab, [tuple(m.split()) for m in merges]))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert [e.tokens for e in reference.encode_batch(words)] == tokens


def test_bad_vocabularies_and_merges_are_refused():
    symbols = bytes_to_unicode()
    vocab = {symbols[b]: b for b in range(256)}
    with pytest.raises(ValueError, match="byte symbols"):
        BytePairTokenizer({"a": 0}, [])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        BytePairTokenizer(vocab, ["a b"])
    with pytest.raises(ValueError, match="two symbols"):
        BytePairTokenizer(vocab, ["a b c"])
