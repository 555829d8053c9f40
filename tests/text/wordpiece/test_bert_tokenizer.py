"""BertTokenizer: parity with the reference (Hugging Face `tokenizers`), offsets, bad input."""


import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.text import BertTokenizer, string_batches
from tests.text.fuzz_texts import (
    as_reference_text,
    fuzz_texts,
    real_text_corpora,
    tokenizer_corpus,
)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY_VOCAB = SPECIALS + ["the", "qu", "##ick", "fox", ".", "é", "a", "##a", "b"]


@pytest.fixture(scope="module")
def reference(vocab_file):
    """The reference (Hugging Face `tokenizers`), uncased and cased."""
    tokenizers = pytest.importorskip("tokenizers", reason="reference tokenizer for parity")
    return {
        lower_case: tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=lower_case)
        for lower_case in (True, False)
    }


@pytest.fixture(scope="module")
def corpus():
    return tokenizer_corpus()


@pytest.fixture(scope="module")
def real_text():
    return real_text_corpora()


def batched(tokenize, lines, batch_size=1024):
    out = []
    for i in range(0, len(lines), batch_size):
        out.extend(tokenize(tf.constant(lines[i : i + batch_size])).to_list())
    return out


def reference_ids(reference, lines):
    lines = [as_reference_text(line) for line in lines]
    return [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]


def batched_offsets(tokenizer, lines, batch_size=256):
    """`(ids, starts, ends)` of each line, from one traced `tokenize_with_offsets`."""
    tokenize = tf.function(tokenizer.tokenize_with_offsets,
                           input_signature=[tf.TensorSpec([None], tf.string)])
    out = []
    for i in range(0, len(lines), batch_size):
        ids, starts, ends = tokenize(tf.constant(lines[i : i + batch_size]))
        out.extend(zip(ids.to_list(), starts.to_list(), ends.to_list(), strict=True))
    return out


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_real_text_corpora_ids_equal_reference(vocab_file, reference, real_text, lower_case):
    # The tokenizer corpus, the demo corpus (the standard library's docstrings) and the task
    # data: both pipelines give the reference's ids on every line, the TFLite-compatible
    # one the default's offsets.
    assert all(len(real_text[name]) >= 5000 for name in ("tokenizer_corpus", "stdlib_docstrings"))
    names = [name for name, lines in real_text.items() for _ in lines]
    lines = [line for corpus_lines in real_text.values() for line in corpus_lines]
    expected = reference_ids(reference[lower_case], lines)
    default = BertTokenizer(vocab_file, lower_case=lower_case)
    tflite = BertTokenizer(vocab_file, lower_case=lower_case, tflite_compatible=True)
    default_offsets = batched_offsets(default, lines)
    tflite_ids = batched(tf.function(tflite.call, input_signature=[
        tf.TensorSpec([None], tf.string)]), lines, batch_size=256)
    for pipeline, ids in [("default", [o[0] for o in default_offsets]), ("tflite", tflite_ids)]:
        differing = [(name, line) for name, line, a, b in zip(
            names, lines, ids, expected, strict=True) if a != b]
        assert not differing, f"{pipeline}: {len(differing)} lines differ, e.g. {differing[:3]}"
    differing = [(name, line) for name, line, a, b in zip(
        names, lines, batched_offsets(tflite, lines), default_offsets, strict=True) if a != b]
    assert not differing, f"{len(differing)} lines with other offsets, e.g. {differing[:3]}"


@pytest.mark.parametrize("tflite_compatible", [False, True], ids=["reference", "tflite"])
@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_fuzz_ids_equal_reference(vocab_file, reference, lower_case, tflite_compatible):
    texts = fuzz_texts(3000, seed=lower_case + 2 * tflite_compatible)
    # Both routes of the default pipeline are exercised.
    plain_ascii = [t for t in texts if all(0x20 <= b < 0x7F or b in b"\t\n\r" for b in t)]
    assert 200 <= len(plain_ascii) <= 2800
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case,
                              tflite_compatible=tflite_compatible)
    ours = batched(tf.function(tokenizer.call), texts, batch_size=256)
    expected = reference_ids(reference[lower_case], texts)
    differing = [t for t, a, b in zip(texts, ours, expected, strict=True) if a != b]
    rate = 1 - len(differing) / len(texts)
    assert rate >= 0.999, f"{rate:.4%} of {len(texts)} identical, e.g. {differing[:3]}"
    if tflite_compatible:  # its offsets are the default pipeline's
        ours = batched_offsets(tokenizer, texts)
        default = batched_offsets(BertTokenizer(vocab_file, lower_case=lower_case), texts)
        same = np.mean([a == b for a, b in zip(ours, default, strict=True)])
        assert same >= 0.999, f"{same:.4%} of {len(texts)} with the default's offsets"


def code_points_to_compare():
    """Every code point, except that large uniform ranges (CJK ideographs, Hangul syllables,
    private use, unassigned planes 4-13) are sampled."""
    uniform = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF),
               (0x20000, 0x3FFFF), (0x40000, 0xDFFFF), (0xF0000, 0x10FFFF)]
    return [
        cp for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and (cp % 97 == 0 or not any(a <= cp <= b for a, b in uniform))
    ]


@pytest.mark.parametrize("tflite_compatible", [False, True], ids=["reference", "tflite"])
@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_every_code_point_equals_reference(vocab_file, reference, lower_case,
                                           tflite_compatible):
    # Between ASCII letters, a character shows whether it is removed ("ab"), whitespace
    # ("a", "b"), isolated ("a", x, "b") or part of the word, and how it normalizes.
    code_points = code_points_to_compare()
    lines = [" ".join(f"a{chr(c)}b" for c in code_points[i : i + 64])
             for i in range(0, len(code_points), 64)]
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case,
                              tflite_compatible=tflite_compatible)
    ours = batched(tf.function(tokenizer.call), lines, batch_size=512)
    expected = reference_ids(reference[lower_case], lines)
    # Each line holds "a{c}b" groups, so its code points sit at every 4th character.
    differing = [f"U+{ord(c):04X}"
                 for line, a, b in zip(lines, ours, expected, strict=True) if a != b
                 for c in line[1::4]]
    assert not differing, f"lines with these code points differ: {differing[:64]}"


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_plain_ascii_route_keeps_row_order_and_reference_ids(vocab_file, reference, lower_case):
    # Plain ASCII lines (printable, tab, line breaks) take a faster route than the others;
    # interleaved, every row must still come back in place with the reference's ids.
    printable = " ".join(f"A{chr(c)}b" for c in range(0x20, 0x7F)) + "\tTab\r\nBreaks"
    lines = [printable, "Ünïcödé 漢字", "", "x\x0by", "Hello, World!", "\u3000", "end."]
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    ids, starts, ends = tokenizer.tokenize_with_offsets(lines)
    assert ids.to_list() == tokenizer(lines).to_list()
    assert ids.to_list() == reference_ids(reference[lower_case], lines)
    encodings = reference[lower_case].encode_batch(lines, add_special_tokens=False)
    for row in (0, 4):  # ASCII: byte offsets are character offsets
        ours = list(zip(starts[row].numpy().tolist(), ends[row].numpy().tolist(), strict=True))
        assert ours == encodings[row].offsets


def test_offsets_and_word_ids_equal_reference(vocab_file, reference, corpus):
    tokenizer = BertTokenizer(vocab_file)
    ids, starts, ends = tokenizer.tokenize_with_offsets(corpus)
    word_ids = tokenizer.word_ids(ids).to_list()
    assert ids.to_list() == batched(tokenizer, corpus)
    for line, encoding, line_starts, line_ends, line_words in zip(
        corpus, reference[True].encode_batch(corpus, add_special_tokens=False),
        starts.to_list(), ends.to_list(), word_ids, strict=True,
    ):
        # The reference counts characters, we count bytes.
        char_at_byte = {len(line[:i].encode("utf-8")): i for i in range(len(line) + 1)}
        ours = [(char_at_byte[s], char_at_byte[e])
                for s, e in zip(line_starts, line_ends, strict=True)]
        assert ours == encoding.offsets, line
        assert line_words == encoding.word_ids, line


def test_routes_in_two_halves_keep_every_row_in_place(vocab_file, corpus):
    # With _ROWS_TO_SPLIT_A_ROUTE rows or more, a route runs on two halves of them side by
    # side: each row must come back as it does alone.
    non_ascii = [line for line in corpus if not line.isascii()]
    ascii_lines = [line for line in corpus if line.isascii()]
    rows = string_batches._ROWS_TO_SPLIT_A_ROUTE + 5
    lines = [line for pair in zip(non_ascii[:rows], ascii_lines, strict=False) for line in pair]
    tokenizer = BertTokenizer(vocab_file)
    together = tokenizer.tokenize_with_offsets(lines)
    alone = tf.function(tokenizer.tokenize_with_offsets)
    for row, line in enumerate(lines):
        for whole, one in zip(together, alone(tf.constant([line])), strict=True):
            assert whole[row].numpy().tolist() == one[0].numpy().tolist(), line
    assert tokenizer(lines).to_list() == together[0].to_list()


def test_offsets_locate_wordpieces_in_the_input():
    tokenizer = BertTokenizer(TINY_VOCAB)
    text = "The\u200b  QUICK\tfoxé. " + "a" * 101
    ids, starts, ends = tokenizer.tokenize_with_offsets([text])
    raw = text.encode("utf-8")
    pieces = [raw[s:e].decode("utf-8")
              for s, e in zip(starts[0].numpy(), ends[0].numpy(), strict=True)]
    assert [tokenizer.id_to_token(i) for i in ids[0].numpy()] == [
        "the", "qu", "##ick", "[UNK]", ".", "[UNK]"
    ]
    # The zero-width space is removed; "foxé" has no wordpieces, so [UNK] spans the word;
    # the over-long word becomes one [UNK] spanning it.
    assert pieces == ["The", "QU", "ICK", "foxé", ".", "a" * 101]
    assert tokenizer.word_ids(ids).to_list() == [[0, 1, 1, 2, 3, 4]]


def test_tflite_compatible_offsets_equal_reference(vocab_file, corpus):
    lines = corpus + ["Opéned 군 كَ x\u200b y", "a" * 101 + " b", "\x00é\u0301\u200bx"]
    ours = BertTokenizer(vocab_file, tflite_compatible=True).tokenize_with_offsets(lines)
    reference_pipeline = BertTokenizer(vocab_file).tokenize_with_offsets(lines)
    for a, b in zip(ours, reference_pipeline, strict=True):
        assert a.to_list() == b.to_list()
    # The pieces of a decomposed syllable share its span; removed characters (the vowel mark
    # after "ك", the zero-width space after "x") are in no piece.
    text = lines[-3]
    row = len(corpus)
    pieces = [text.encode("utf-8")[s:e].decode("utf-8")
              for s, e in zip(ours[1][row].numpy(), ours[2][row].numpy(), strict=True)]
    assert pieces == ["Opéned", "군", "군", "군", "ك", "x", "y"]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_tflite_compatible_pipeline_normalizes_as_the_reference(vocab_file, reference,
                                                                lower_case):
    # Each of these differed under FastBertNormalize (NFKC case folding, control characters
    # as spaces, private use kept, newer combining marks dropped).
    lines = ["50% off™ — ½ price", "wait…", "straße σας ﬁ x² ＡＢ", "a\x0bb", "x\ue000y",
             "a\u1ac1b", "군", "İ ǅ"]
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case, tflite_compatible=True)
    assert tokenizer(lines).to_list() == reference_ids(reference[lower_case], lines)


def test_both_pipelines_keep_combining_marks_in_input_order(tmp_path):
    # The one known difference (module docstring): uncased, the reference's NFD sorts kept
    # marks by combining class (U+1D165: 216, U+1D16D: 226); per character, we cannot.
    tokenizers = pytest.importorskip("tokenizers", reason="reference tokenizer for parity")
    vocab = SPECIALS + ["a", "##\U0001d165", "##\U0001d16d"]
    path = tmp_path / "vocab.txt"
    path.write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    text = "a\U0001d16d\U0001d165"
    reference = tokenizers.BertWordPieceTokenizer(str(path), lowercase=True)
    assert reference.encode(text, add_special_tokens=False).ids == [5, 6, 7]
    for tflite_compatible in (False, True):
        tokenizer = BertTokenizer(vocab, tflite_compatible=tflite_compatible)
        assert tokenizer(text).numpy().tolist() == [5, 7, 6]


@pytest.mark.parametrize("tflite_compatible", [False, True])
def test_bad_input_has_defined_results(vocab_file, reference, tflite_compatible):
    tokenizer = BertTokenizer(vocab_file, tflite_compatible=tflite_compatible)
    empty = tokenizer(tf.constant([], tf.string))
    assert isinstance(empty, tf.RaggedTensor) and empty.shape[0] == 0
    assert tokenizer(["", " \t\n\u3000 ", "\u200b"]).to_list() == [[], [], []]
    huge = ("Lorem ipsum dolor sit amet, Ünïcödé 漢字 😀! " * 25000)[: 1 << 20]
    huge_ids = tokenizer([huge])
    assert huge_ids.shape[0] == 1
    assert huge_ids[0].numpy().tolist() == reference_ids(reference[True], [huge])[0]


def test_invalid_utf8_is_ignored_like_replacement_characters(vocab_file, reference):
    tokenizer = BertTokenizer(vocab_file)
    raw = [b"caf\xc3 au\xff lait\xe2\x82", b"\xed\xa0\x80x\xf4\x90\x80\x80y", b"\xc0\xaf"]
    expected = reference_ids(reference[True], [r.decode("utf-8", "replace") for r in raw])
    assert tokenizer(tf.constant(raw)).to_list() == expected
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(raw[:1]))
    # Offsets index the input bytes.
    pieces = [raw[0][s:e] for s, e in zip(starts[0].numpy(), ends[0].numpy(), strict=True)]
    assert pieces == [b"caf", b"au", b"lai", b"t"]
    tflite = BertTokenizer(vocab_file, tflite_compatible=True)
    assert tflite(tf.constant(raw)).to_list() == expected
    assert [x.to_list() for x in tflite.tokenize_with_offsets(tf.constant(raw))] == [
        x.to_list() for x in tokenizer.tokenize_with_offsets(tf.constant(raw))]


def test_word_length_limit_counts_characters(vocab_file, reference):
    tokenizer = BertTokenizer(vocab_file)
    lines = ["a" * 100, "a" * 101, "б" * 100, "б" * 101, "e\u0301" * 100]
    ids = tokenizer(lines).to_list()
    assert ids == reference_ids(reference[True], lines)
    assert ids[1] == ids[3] == [tokenizer.unk_id]
    assert ids[0] != [tokenizer.unk_id] and ids[2] != [tokenizer.unk_id]


def test_single_string_and_tf_data(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    single = tokenizer("Hello, world!")
    assert isinstance(single, tf.Tensor) and single.dtype == tf.int32
    assert single.numpy().tolist() == [7592, 1010, 2088, 999]
    dataset = tf.data.Dataset.from_tensor_slices(["Hello, world!", "hi"]).batch(2)
    assert next(iter(dataset.map(tokenizer))).to_list() == [[7592, 1010, 2088, 999], [7632]]
    with pytest.raises(ValueError, match="1-D batch"):
        tokenizer([["nested"]])


def test_vocabulary_lookups_and_special_ids(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    assert tokenizer.vocabulary_size() == 30522
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
            tokenizer.mask_id) == (0, 100, 101, 102, 103)
    assert tokenizer.token_to_id("hello") == 7592
    assert tokenizer.id_to_token(7592) == "hello"
    with pytest.raises(KeyError):
        tokenizer.token_to_id("not-a-token")
    with pytest.raises(KeyError):
        tokenizer.id_to_token(30522)


def test_vocabulary_without_special_tokens_names_them_and_the_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "hello"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[SEP\].*\[MASK\]") as error:
        BertTokenizer(str(path))
    assert str(path) in str(error.value)
    with pytest.raises(ValueError, match="repeats"):
        BertTokenizer(TINY_VOCAB + ["the"])


@pytest.mark.parametrize("tflite_compatible", [False, True])
def test_config_round_trip(tmp_path, tflite_compatible):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(path), lower_case=False, tflite_compatible=tflite_compatible,
                              max_text_bytes=64)
    config = tokenizer.get_config()
    assert config["vocabulary"] == TINY_VOCAB  # the list, not the path
    assert config["max_text_bytes"] == 64
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(tokenizer)
    )
    assert isinstance(restored, BertTokenizer)
    assert restored.get_config() == config
    text = ["The quick fox.", "the é"]
    assert restored(text).to_list() == tokenizer(text).to_list() == [[1, 6, 7, 8, 9], [5, 10]]


@pytest.mark.parametrize("tflite_compatible", [False, True])
def test_max_text_bytes_tokenizes_the_text_cut_at_a_character_boundary(tflite_compatible):
    # ASCII, then characters of 2, 3 and 4 bytes straddling every limit, a combining mark,
    # invalid bytes, empty and short rows.
    texts = [b"The quick brown fox jumps.", "Opéned é€😀 café́ x".encode(),
             "a€€€€ 😀😀😀 b".encode(), b"ab\xff\xfe cd ef", b"", b"fox"]
    # Single characters (quick to build a tokenizer for): every kept character is a piece.
    chars = list("abcdefhijknopqrstuwxyz.é€😀")
    vocab = SPECIALS + chars + ["##" + c for c in chars]
    whole = BertTokenizer(vocab, tflite_compatible=tflite_compatible)
    for max_bytes in (4, 5, 6, 7, 8, 9, 12, 14, 17, 21):
        cut = string_batches.cut_texts(tf.constant(texts), max_bytes)
        ours = BertTokenizer(vocab, tflite_compatible=tflite_compatible,
                             max_text_bytes=max_bytes).tokenize_with_offsets(texts)
        # The cut texts begin the texts: the same offsets index the original ones.
        for a, b in zip(ours, whole.tokenize_with_offsets(cut), strict=True):
            assert a.to_list() == b.to_list(), max_bytes
    with pytest.raises(ValueError, match="max_text_bytes must be an integer of at least 4"):
        BertTokenizer(TINY_VOCAB, tflite_compatible=tflite_compatible, max_text_bytes=3)


def test_ids_are_int32_ragged(vocab_file):
    ids = BertTokenizer(vocab_file)(np.array(["a b", "c"]))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.dtype == tf.int32
