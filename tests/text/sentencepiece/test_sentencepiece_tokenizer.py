"""SentencePieceTokenizer: the `sentencepiece` library's ids after ALBERT's preprocessing
(stored in tests/text/data/sentencepiece by make_sentencepiece_fixture.py), the
preprocessing itself against Python's, offsets, graph ops, SavedModel, config and `.keras`
round trips, and the TFLite route in LiteRT."""

import hashlib
import json
import random
import struct
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2

from keras_bert_core.export import (
    graph_op_types,
    saved_model_op_types,
    unsupported_tf_serving_ops,
)
from keras_bert_core.export.op_allowlists import tflite_op_types, unsupported_tflite_ops
from keras_bert_core.text.sentencepiece import albert_preprocessing, characters
from keras_bert_core.text.sentencepiece.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.text.fuzz_texts import DATA, as_reference_text, fuzz_texts, tokenizer_corpus

FIXTURE = DATA / "sentencepiece"
MODEL_FILE = str(FIXTURE / "spiece.model")
CONFIGS = {"uncased": (True, False), "cased": (False, False),
           "uncased_accents": (True, True), "cased_accents": (False, True)}
STRINGS = tf.TensorSpec([None], tf.string)

# Piece types of sentencepiece_model.proto.
NORMAL, UNKNOWN, CONTROL = 1, 2, 3


def unigram_model_proto(pieces):
    """A SentencePiece unigram model (serialized `ModelProto` bytes) with ALBERT's special
    pieces (`<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`, ids 0-4), then `pieces`, a list of
    `(piece, score)` pairs. No character normalization (only the dummy prefix and the
    whitespace handling); real models come from `spm_train`."""

    def varint(value):
        value &= (1 << 64) - 1
        out = bytearray()
        while True:
            out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
            value >>= 7
            if not value:
                return bytes(out)

    def field(number, payload):  # length-delimited
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    def number(field_number, value):
        return varint(field_number << 3) + varint(value)

    specials = [("<pad>", 0.0, CONTROL), ("<unk>", 0.0, UNKNOWN), ("[CLS]", 0.0, CONTROL),
                ("[SEP]", 0.0, CONTROL), ("[MASK]", 0.0, CONTROL)]
    proto = b"".join(
        field(1, field(1, piece.encode("utf-8")) + varint(2 << 3 | 5)
              + struct.pack("<f", score) + number(3, kind))
        for piece, score, kind in specials + [(p, s, NORMAL) for p, s in pieces])
    # Trainer spec: unigram; unk 1, no bos/eos, pad 0. Normalizer spec: identity.
    proto += field(2, number(3, 1) + number(40, 1) + number(41, -1) + number(42, -1)
                   + number(43, 0))
    return proto + field(3, field(1, b"identity"))


def albert_preprocess(text, lower_case=True, keep_accents=False):
    """ALBERT's `preprocess_text`, as tests/text/make_sentencepiece_fixture.py runs it."""
    text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    return text.lower() if lower_case else text


@pytest.fixture(scope="module")
def reference():
    """`{config: (texts, ids)}` of the fixture, and the texts' Unicode version."""
    with open(FIXTURE / "reference_texts.jsonl", encoding="utf-8") as f:
        extra = [json.loads(line) for line in f]
    corpus = tokenizer_corpus()
    stored = np.load(FIXTURE / "reference_ids.npz")
    digest = hashlib.sha256(json.dumps(corpus, ensure_ascii=False).encode("utf-8")).hexdigest()
    assert str(stored["corpus_sha256"]) == digest, (
        "tokenizer_corpus.jsonl changed: run tests/text/make_sentencepiece_fixture.py")
    texts = corpus + extra
    # Characters unassigned in the fixture's Unicode version may have properties now.
    newer = set()
    if str(stored["unidata_version"]) != unicodedata.unidata_version:
        newer = {chr(c) for c in stored["unassigned"]}
    references = {}
    for name in CONFIGS:
        lines, lengths = stored[f"{name}_lines"], stored[f"{name}_lengths"]
        ids = np.split(stored[f"{name}_ids"].astype(int), np.cumsum(lengths)[:-1])
        kept = [(texts[i], row.tolist()) for i, row in zip(lines, ids, strict=True)
                if not newer.intersection(texts[i])]
        references[name] = ([t for t, _ in kept], [r for _, r in kept])
    return references


@pytest.fixture(scope="module")
def tokenizer():
    return SentencePieceTokenizer(MODEL_FILE)


def batched_ids(tokenizer, texts, batch_size=512, with_offsets=False):
    tokenize = tf.function(tokenizer.tokenize_with_offsets if with_offsets else tokenizer.call,
                           input_signature=[STRINGS])
    ids = []
    for i in range(0, len(texts), batch_size):
        out = tokenize(tf.constant(texts[i : i + batch_size]))
        ids.extend((out[0] if with_offsets else out).to_list())
    return ids


@pytest.mark.parametrize("tflite_compatible", [False, True], ids=["default", "tflite"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_ids_equal_sentencepiece(reference, name, tflite_compatible):
    """Both pipelines, and the default one's `tokenize_with_offsets`, give the library's ids
    on every stored text (ties between equally scored segmentations included)."""
    lower_case, keep_accents = CONFIGS[name]
    texts, expected = reference[name]
    tokenizer = SentencePieceTokenizer(MODEL_FILE, lower_case=lower_case,
                                       keep_accents=keep_accents,
                                       tflite_compatible=tflite_compatible)
    assert len(texts) > (5000 if name == "uncased" else 600)
    results = {"call": batched_ids(tokenizer, texts)}
    if not tflite_compatible:
        results["tokenize_with_offsets"] = batched_ids(tokenizer, texts, with_offsets=True)
    for method, ours in results.items():
        differ = [(t, a, b) for t, a, b in zip(texts, ours, expected, strict=True) if a != b]
        assert not differ, f"{method}: {len(differ)} of {len(texts)} differ: {differ[:3]}"


def test_preprocessing_equals_pythons_on_fuzz_and_every_character_class():
    """The graph's preprocessed text is ALBERT's, on both pipelines and all four settings:
    fuzz lines, every code point whose preprocessing is not itself (and a sample of the
    others) in contexts that tell the final sigma, quote pairs and whitespace apart."""
    rng = random.Random(3)
    valid = [t.decode("utf-8") for t in fuzz_texts(300, seed=7)
             if as_reference_text(t).encode("utf-8") == t]
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    lines = list(valid)
    for lower_case, keep_accents in CONFIGS.values():
        block_of, entries, _, _ = albert_preprocessing.albert_character_table(lower_case,
                                                                              keep_accents)
        entry = entries[block_of[np.array(code_points) // 128] * 128 + np.array(code_points) % 128]
        special = [c for c, e in zip(code_points, entry, strict=True) if e % 8 != 0]
        lines.extend(f"Σ{chr(c)}Σ Α{chr(c)}Σ Α{chr(c)}Σ{chr(c)}Α {chr(c)}{chr(c)}' x{chr(c)}"
                     for c in rng.sample(special, min(len(special), 1500)))
    lines.extend(f"ΑΣ{chr(c)} {chr(c)}`` ''{chr(c)}" for c in rng.sample(code_points, 2000))
    for lower_case, keep_accents in CONFIGS.values():
        preprocessing = albert_preprocessing.AlbertPreprocessing(lower_case, keep_accents)
        expected = [albert_preprocess(t, lower_case, keep_accents).encode("utf-8") for t in lines]
        text = tf.constant(lines)
        out_chars, _, splits = preprocessing(characters.characters(text))
        assert characters.spell(out_chars, splits).numpy().tolist() == expected
        out_chars, _, splits = preprocessing(characters.tflite_characters(text))
        spelled = characters.ByteSpeller(0xE000)(out_chars, splits).numpy().tolist()
        assert spelled == [t.replace(b"\x00", "\ue000".encode("utf-8")) for t in expected]


def test_invalid_utf8_reads_as_replacement_characters_on_both_pipelines(tokenizer):
    texts = fuzz_texts(400, seed=11) + [b"\xff\xfe\x00\x80 \xc3", b"a\xe2\x82b", b"\xed\xa0\x80"]
    tflite = SentencePieceTokenizer(MODEL_FILE, tflite_compatible=True)
    ours, fast = tokenizer(tf.constant(texts)).to_list(), tflite(tf.constant(texts)).to_list()
    expected = batched_ids(tflite, [as_reference_text(t) for t in texts])
    assert fast == expected
    assert ours == expected
    assert tokenizer.tokenize_with_offsets(tf.constant(texts))[0].to_list() == expected


@pytest.mark.parametrize("tflite_compatible", [False, True])
def test_max_text_bytes_tokenizes_the_text_cut_at_a_character_boundary(tflite_compatible):
    from keras_bert_core.text.string_batches import cut_texts

    # ASCII, characters of 2, 3 and 4 bytes straddling every limit, a combining mark,
    # invalid bytes, empty and short rows.
    texts = [b"The quick brown fox jumps.", "Opéned é€😀 café́ x".encode(),
             "a€€€€ 😀😀😀 b".encode(), b"ab\xff\xfe cd ef", b"", b"fox"]
    whole = SentencePieceTokenizer(MODEL_FILE, tflite_compatible=tflite_compatible)
    for max_bytes in (4, 5, 6, 7, 8, 9, 12, 14, 17, 21):
        cut = cut_texts(tf.constant(texts), max_bytes)
        ours = SentencePieceTokenizer(MODEL_FILE, tflite_compatible=tflite_compatible,
                                      max_text_bytes=max_bytes)
        assert ours(texts).to_list() == whole(cut).to_list(), max_bytes
        # The cut texts begin the texts: the same offsets index the original ones.
        for a, b in zip(ours.tokenize_with_offsets(texts), whole.tokenize_with_offsets(cut),
                        strict=True):
            assert a.to_list() == b.to_list(), max_bytes
    with pytest.raises(ValueError, match="max_text_bytes must be an integer of at least 4"):
        SentencePieceTokenizer(MODEL_FILE, max_text_bytes=3)


def test_offsets_locate_the_text_of_each_piece(tokenizer, reference):
    """Each piece's text is in the preprocessed span (the model's normalizer: NFKC, some
    control and format characters removed); spans are in order; on lines that preprocessing
    leaves alone they are the SentencePiece op's own offsets on the input, but for a word's
    first piece, which starts at the word instead of the space before it; where the op
    orders tied pieces differently, each of our pieces spans exactly its own text."""
    texts, _ = reference["uncased"]
    tokenize = tf.function(tokenizer.tokenize_with_offsets, input_signature=[STRINGS])
    op = tf_text.SentencepieceTokenizer(open(MODEL_FILE, "rb").read(), out_type=tf.int32)
    checked = unchanged = reordered = 0
    for i in range(0, len(texts), 512):
        batch = texts[i : i + 512]
        ids, starts, ends = (x.to_list() for x in tokenize(tf.constant(batch)))
        for text, row, row_starts, row_ends in zip(batch, ids, starts, ends, strict=True):
            data = text.encode("utf-8")
            assert row_starts == sorted(row_starts)
            for token_id, start, end in zip(row, row_starts, row_ends, strict=True):
                assert 0 <= start <= end <= len(data)
                if token_id == tokenizer.unk_id:
                    continue
                piece = unicodedata.normalize("NFKC", tokenizer.id_to_token(token_id))
                span = unicodedata.normalize("NFKC", albert_preprocess(
                    data[start:end].decode("utf-8")))
                kept = "".join(c for c in span if unicodedata.category(c) not in ("Cc", "Cf"))
                # The span alone does not say whether its sigma is final.
                piece = piece.replace("▁", "").replace("ς", "σ")
                assert piece in span.replace("ς", "σ") or piece in kept.replace("ς", "σ"), (
                    text, piece, start, end)
                checked += 1
            if text and albert_preprocess(text) == text:
                op_ids, op_starts, op_ends = (x.to_list()[0]
                                              for x in op.tokenize_with_offsets([text]))
                if op_ids != row:
                    assert sorted(op_ids) == sorted(row)
                    assert [data[start:end].decode("utf-8") for start, end in zip(
                        row_starts, row_ends, strict=True)] == [
                            tokenizer.id_to_token(i).replace("▁", "") for i in row]
                    reordered += 1
                    continue
                op_starts = [start + (data[start:start + 1] == b" " and start < end)
                             for start, end in zip(op_starts, op_ends, strict=True)]
                assert (row_starts, row_ends) == (op_starts, op_ends)
                unchanged += 1
    assert checked > 150_000 and unchanged > 500 and reordered >= 3


def test_offsets_of_merged_quotes_stripped_accents_and_expanded_characters(tokenizer):
    texts = ["``hi'' there", "cafe\u0301  x", "ﬁ ½", "  x", "\u0301x", "Hello  World"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    spans = [[(tokenizer.id_to_token(i), text.encode("utf-8")[s:e].decode("utf-8"))
              for i, s, e in zip(row, row_starts, row_ends, strict=True)]
             for text, row, row_starts, row_ends in zip(
                 texts, ids.to_list(), starts.to_list(), ends.to_list(), strict=True)]
    assert [[p for p, _ in row] for row in spans] == [
        [tokenizer.id_to_token(i) for i in row] for row in tokenizer(texts).to_list()]
    assert spans == [
        # A pair of quotes is one '"' that holds both.
        [("▁\"", "``"), ("hi", "hi"), ('"', "''"), ("▁there", "there")],
        # A removed accent goes with its letter; a whitespace run is its first character.
        [("▁c", "c"), ("a", "a"), ("f", "f"), ("e", "e\u0301"), ("▁", ""), ("x", "x")],
        # Pieces of one character (its NFKD: "fi", "1⁄2") each hold all of it.
        [("▁f", "ﬁ"), ("i", "ﬁ"), ("▁1", "½"), ("⁄", "½"), ("2", "½")],
        # The text's start: an empty span where its first kept character starts.
        [("▁", ""), ("x", "x")],
        [("▁", ""), ("x", "x")],
        [("▁", ""), ("h", "H"), ("e", "e"), ("l", "l"), ("l", "l"), ("o", "o"),
         ("▁w", "W"), ("or", "or"), ("l", "l"), ("d", "d")],
    ]
    assert starts.to_list()[3:5] == [[2, 2], [2, 2]]


def test_offsets_of_tied_pieces_that_the_op_orders_differently():
    """tf.text's SentencepieceOp orders these tied pieces differently; ours are the
    library's (sentencepiece 0.2.3), each spanning its own characters, or, where the
    model's normalizer changed them (full-width signs), the op pieces it starts and ends in."""
    tokenizer = SentencePieceTokenizer(MODEL_FILE, keep_accents=True)
    texts = ["+===============+", "+" + "\uff1d" * 15 + "+"]
    op = tf_text.SentencepieceTokenizer(open(MODEL_FILE, "rb").read(), out_type=tf.int32)
    library = ["▁+", "=", "=", "=", "====", "====", "====", "+"]
    ids, starts, ends = (x.to_list() for x in tokenizer.tokenize_with_offsets(texts))
    for row, op_row in zip(ids, op.tokenize(texts).to_list(), strict=True):
        assert [tokenizer.id_to_token(i) for i in row] == library
        assert [tokenizer.id_to_token(i) for i in op_row] == [
            "▁+", "=", "=", "====", "====", "====", "=", "+"]
    assert [texts[0][s:e] for s, e in zip(starts[0], ends[0], strict=True)] == [
        p.replace("▁", "") for p in library]
    assert list(zip(starts[1], ends[1], strict=True)) == [
        (0, 1), (1, 4), (4, 7), (7, 19), (7, 31), (19, 43), (31, 46), (46, 47)]
    # The TFLite route counts the normalizer's units: each piece spans its own characters,
    # as in the library.
    tflite = SentencePieceTokenizer(MODEL_FILE, keep_accents=True, tflite_compatible=True)
    _, starts, ends = (x.to_list() for x in tflite.tokenize_with_offsets(texts))
    assert list(zip(starts[1], ends[1], strict=True)) == [
        (0, 1), (1, 4), (4, 7), (7, 10), (10, 22), (22, 34), (34, 46), (46, 47)]
    assert (starts[0], ends[0]) == (
        [0, 1, 2, 3, 4, 8, 12, 16], [1, 2, 3, 4, 8, 12, 16, 17])


def library_offsets(text):
    """The `sentencepiece` library's byte offsets of its pieces of `text`, a word's first
    piece starting at the word (not at the space before it), as the layer gives them."""
    library = SentencePieceProcessor(model_file=MODEL_FILE)
    pieces = library.encode(text, return_type="proto").pieces
    data = text.encode("utf-8")
    return ([p.begin + (data[p.begin:p.begin + 1] == b" " and p.begin < p.end) for p in pieces],
            [p.end for p in pieces])


@pytest.mark.parametrize("name", [pytest.param(name, marks=[] if name == "uncased" else
                                                [pytest.mark.slow]) for name in CONFIGS])
def test_tflite_offsets_equal_the_default_pipelines_and_the_librarys(reference, name):
    """The TFLite route's offsets (the normalizer's units and the pieces replayed on
    character counts) equal the default route's on every stored text, and the
    `sentencepiece` library's own on those that preprocessing leaves alone."""
    lower_case, keep_accents = CONFIGS[name]
    texts, expected = reference[name]
    options = {"lower_case": lower_case, "keep_accents": keep_accents}
    default, tflite = (tf.function(SentencePieceTokenizer(
        MODEL_FILE, tflite_compatible=route, **options).tokenize_with_offsets,
        input_signature=[STRINGS]) for route in (False, True))
    differ, unchanged = [], 0
    for i in range(0, len(texts), 512):
        batch = texts[i : i + 512]
        ids, starts, ends = (x.to_list() for x in tflite(tf.constant(batch)))
        _, default_starts, default_ends = (x.to_list() for x in default(tf.constant(batch)))
        assert ids == expected[i : i + 512]
        for row, text in enumerate(batch):
            if (starts[row], ends[row]) != (default_starts[row], default_ends[row]):
                differ.append(text)
            if text and albert_preprocess(text, lower_case, keep_accents) == text:
                assert (starts[row], ends[row]) == library_offsets(text), text
                unchanged += 1
    assert not differ, f"{len(differ)} of {len(texts)} differ: {differ[:3]}"
    assert unchanged > (500 if name == "uncased" else 100)


def test_tflite_offsets_of_the_normalizers_units():
    """Texts that preprocessing leaves alone (cased, accents kept) but the model's
    normalizer does not: rules of several characters (an accent composed, Hangul jamo, a
    chain of overlapping rules that the normalizer takes greedily), outputs with spaces,
    removed characters, runs of unknown characters, NUL. The library's offsets."""
    texts = ["e\u0301te\u0301 cafe\u0301", "\u1112\u1161\u11ab\u1100\u1173\u11af \u1112\u1161",
             "\U0001611e" * 5 + " x", "\U0001611e\U0001611e\U00016120" * 3, "x\u00a8y \u00a8",
             "a\ufdfa b", "\u200bx \u200b", "\u2603\u2603 \u2603x", "\ufb01ne \u2460\u2474",
             "\u0cc6\u0cc2\u0cd5 ok", "a\u0000b", "\u00ad", "A\u2581B"]
    tokenizer = SentencePieceTokenizer(MODEL_FILE, lower_case=False, keep_accents=True,
                                       tflite_compatible=True)
    ids, starts, ends = (x.to_list() for x in tokenizer.tokenize_with_offsets(texts))
    library = SentencePieceProcessor(model_file=MODEL_FILE)
    for row, text in enumerate(texts):
        assert albert_preprocess(text, lower_case=False, keep_accents=True) == text
        if "\u0000" in text:  # the layer spells NUL as a character that no piece holds
            assert [tokenizer.id_to_token(i) for i in ids[row]] == ["▁a", "<unk>", "b"]
            assert (starts[row], ends[row]) == ([0, 1, 2], [1, 2, 3])
            continue
        assert ids[row] == library.encode(text), text
        assert (starts[row], ends[row]) == library_offsets(text), text


def test_tflite_offsets_refuse_models_they_do_not_cover():
    """A piece's characters that are no pieces of their own may be unknown in one place and
    not in another: the TFLite route cannot count such a model's unknown pieces. It
    replays ALBERT's whitespace handling only. Both refusals are one line."""
    model = unigram_model_proto([("\u2581the", -1.0), ("\u2581", -2.0)])
    tokenizer = SentencePieceTokenizer(model, tflite_compatible=True)
    assert tokenizer(["the tea"]).to_list() == [[5, 6, 1]]
    with pytest.raises(ValueError, match=r"pieces hold \['e', 'h', 't'\] without"):
        tokenizer.tokenize_with_offsets(["the tea"])
    # Nor a model whose normalizer treats whitespace otherwise than ALBERT's.
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(open(MODEL_FILE, "rb").read())
    proto.normalizer_spec.add_dummy_prefix = False
    tokenizer = SentencePieceTokenizer(proto.SerializeToString(), tflite_compatible=True)
    with pytest.raises(ValueError, match="ALBERT's whitespace handling only"):
        tokenizer.tokenize_with_offsets(["the tea"])


def test_graph_and_saved_model_hold_only_tf_serving_ops(tokenizer, tmp_path):
    for function in (tokenizer.call, tokenizer.tokenize_with_offsets):
        ops = graph_op_types(tf.function(function, input_signature=[STRINGS])
                             .get_concrete_function())
        assert {"UnicodeDecodeWithOffsets", "UnicodeEncode",
                "TFText>FastSentencepieceTokenize"} <= ops
        assert ("SentencepieceTokenizeWithOffsetsOp" in ops) == (
            function == tokenizer.tokenize_with_offsets)
        assert unsupported_tf_serving_ops(ops) == set()
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(lambda text: tokenizer(text).to_tensor(tokenizer.pad_id),
                                  input_signature=[STRINGS])
    module.offsets = tf.function(
        lambda text: [x.to_tensor() for x in tokenizer.tokenize_with_offsets(text)],
        input_signature=[STRINGS])
    tf.saved_model.save(module, str(tmp_path))
    assert unsupported_tf_serving_ops(saved_model_op_types(str(tmp_path))) == set()
    loaded = tf.saved_model.load(str(tmp_path))
    texts = tf.constant(tokenizer_corpus()[-300:])
    assert loaded.tokenize(texts).numpy().tolist() == module.tokenize(texts).numpy().tolist()
    for a, b in zip(loaded.offsets(texts), module.offsets(texts), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_tflite_model_runs_in_litert_with_the_tf_ids_and_offsets(reference):
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="LiteRT interpreter")
    texts, expected = reference["uncased"]
    tokenizer = SentencePieceTokenizer(MODEL_FILE, tflite_compatible=True)

    @tf.function(input_signature=[STRINGS])
    def tokenize(text):
        ids, starts, ends = tokenizer.tokenize_with_offsets(text)
        return {"ids": ids.flat_values, "row_splits": ids.row_splits,
                "starts": starts.flat_values, "ends": ends.flat_values}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [tokenize.get_concrete_function()], tokenizer)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True  # tf.text's ops, resolved by its registrar
    content = converter.convert()
    op_types = tflite_op_types(content)
    assert {"TFText>ByteSplitWithOffsets", "TFText>FastWordpieceDetokenize",
            "TFText>FastSentencepieceTokenize"} <= op_types
    assert unsupported_tflite_ops(op_types) == set()
    run = litert.InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=content).get_signature_runner()
    ours = []
    for i in range(0, len(texts), 1000):
        batch = texts[i : i + 1000]
        out = run(text=np.array(batch, dtype=object))
        splits = out["row_splits"]
        ours.extend(out["ids"][a:b].tolist() for a, b in zip(splits[:-1], splits[1:],
                                                              strict=True))
        in_tf = tokenize(tf.constant(batch))
        for name in ("starts", "ends"):
            np.testing.assert_array_equal(out[name], in_tf[name].numpy(), err_msg=name)
    assert ours == expected


def test_config_and_keras_file_round_trips(reference, tmp_path):
    texts = tf.constant(reference["cased_accents"][0][:200])
    tokenizer = SentencePieceTokenizer(MODEL_FILE, lower_case=False, keep_accents=True)
    config = json.loads(json.dumps(keras.layers.serialize(tokenizer)))
    restored = keras.layers.deserialize(config)
    assert isinstance(restored, SentencePieceTokenizer)
    assert restored.get_config() == tokenizer.get_config()
    assert (restored.lower_case, restored.keep_accents, restored.model) == (
        False, True, open(MODEL_FILE, "rb").read())
    assert restored(texts).to_list() == tokenizer(texts).to_list()

    strings = keras.Input(shape=(), dtype="string")
    model = keras.Model(strings, _PaddedIds(tokenizer)(strings))
    model.save(tmp_path / "tokenizer.keras")
    loaded = keras.saving.load_model(tmp_path / "tokenizer.keras")
    np.testing.assert_array_equal(loaded(texts), model(texts))


@keras.saving.register_keras_serializable(package="tests")
class _PaddedIds(keras.layers.Layer):
    """A layer that holds the tokenizer, for the `.keras` round trip (models take dense
    outputs)."""

    def __init__(self, tokenizer, **kwargs):
        super().__init__(**kwargs)
        if isinstance(tokenizer, dict):
            tokenizer = keras.layers.deserialize(tokenizer)
        self.tokenizer = tokenizer

    def call(self, text):
        return self.tokenizer(text).to_tensor(self.tokenizer.pad_id)

    def compute_output_spec(self, text):
        return keras.KerasTensor((text.shape[0], None), "int32")

    def get_config(self):
        return {**super().get_config(), "tokenizer": keras.layers.serialize(self.tokenizer)}


def test_vocabulary_special_ids_inputs_and_detokenize(tokenizer):
    assert tokenizer.vocabulary_size() == 2000
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    assert tokenizer.id_to_token(tokenizer.token_to_id("▁the")) == "▁the"
    with pytest.raises(KeyError):
        tokenizer.token_to_id("not a piece")
    with pytest.raises(KeyError):
        tokenizer.id_to_token(2000)
    with pytest.raises(ValueError, match="batch"):
        tokenizer.tokenize_with_offsets("one string")
    with pytest.raises(TypeError, match="path"):
        SentencePieceTokenizer(12)
    ids = tokenizer("Hello  World")
    assert isinstance(ids, tf.Tensor) and ids.dtype == tf.int32
    from_bytes = SentencePieceTokenizer(open(MODEL_FILE, "rb").read(), tflite_compatible=True)
    assert from_bytes("Hello  World").numpy().tolist() == ids.numpy().tolist()
    # Special tokens in a text are its characters.
    assert tokenizer.cls_id not in tokenizer("[CLS] x [SEP]").numpy().tolist()
    batch = tokenizer(["The  Quick FOX", ""])
    for layer in (tokenizer, from_bytes):
        assert layer.detokenize(batch).numpy().tolist() == [b"the quick fox", b""]
        assert layer.detokenize(batch.to_tensor(0)).numpy().tolist() == [b"the quick fox", b""]
        assert layer.detokenize(ids).numpy() == b"hello world"
    # The TFLite-compatible layer gives offsets with the default pipeline's ops.
    assert [x.to_list() for x in from_bytes.tokenize_with_offsets(["Hello  World"])] == [
        x.to_list() for x in tokenizer.tokenize_with_offsets(["Hello  World"])]
