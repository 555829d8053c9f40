"""BertPreprocessor: parity with Hugging Face encodings (WordPiece, RoBERTa's byte-level
BPE, ALBERT's layout on the `sentencepiece` library's ids), the tokenizer picked from the
vocabulary, input forms, shapes, Keras use."""

import json
import pathlib
import re
import shutil
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.text import (
    BertPreprocessor,
    BertTokenizer,
    BytePairTokenizer,
    SentencePieceTokenizer,
)
from tests.text.fuzz_texts import tokenizer_corpus

DATA = pathlib.Path(__file__).with_name("data")
CORPUS = DATA / "tokenizer_corpus.jsonl"
BPE_VOCAB = str(DATA / "bpe" / "vocab.json")
BPE_MERGES = str(DATA / "bpe" / "merges.txt")
SPIECE = DATA / "sentencepiece" / "spiece.model"
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]


@pytest.fixture(scope="module")
def lines():
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f][::5]


def hf_encode(vocab_file, seq_length, inputs):
    tokenizers = pytest.importorskip("tokenizers", reason="reference encodings for parity")
    reference = tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=True)
    reference.enable_truncation(seq_length, strategy="longest_first")
    reference.enable_padding(length=seq_length)
    encodings = reference.encode_batch(inputs)
    return {
        "token_ids": [e.ids for e in encodings],
        "segment_ids": [e.type_ids for e in encodings],
        "padding_mask": [e.attention_mask for e in encodings],
    }


def as_lists(outputs):
    return {name: x.numpy().tolist() for name, x in outputs.items()}


@pytest.mark.parametrize("seq_length", [16, 128])
def test_pairs_equal_hugging_face_encodings(vocab_file, lines, seq_length):
    first, second = lines[0::2], lines[1::2][: len(lines[0::2])]
    first = first[: len(second)]
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, truncation="longest_first")
    ours = as_lists(preprocessor((first, second)))
    assert ours == hf_encode(vocab_file, seq_length, list(zip(first, second, strict=True)))


def test_single_segments_equal_hugging_face_encodings(vocab_file, lines):
    ours = as_lists(BertPreprocessor(vocab_file, seq_length=24)(lines))
    assert ours == hf_encode(vocab_file, 24, lines)


def test_input_forms():
    preprocessor = BertPreprocessor(TINY_VOCAB, seq_length=8)
    batch = as_lists(preprocessor(["The quick fox.", "fox"]))
    assert batch["token_ids"] == [[2, 5, 6, 7, 8, 9, 3, 0], [2, 8, 3, 0, 0, 0, 0, 0]]
    assert as_lists(preprocessor(tf.constant(["The quick fox.", "fox"]))) == batch
    assert as_lists(preprocessor(np.array(["The quick fox.", "fox"]))) == batch
    single = as_lists(preprocessor("fox"))
    assert single["token_ids"] == [2, 8, 3, 0, 0, 0, 0, 0]
    pair = as_lists(preprocessor(("fox", "the")))
    assert pair["token_ids"] == [2, 8, 3, 5, 3, 0, 0, 0]
    assert pair["segment_ids"] == [0, 0, 0, 1, 1, 0, 0, 0]
    pairs = as_lists(preprocessor((["fox", "the"], tf.constant(["the", "."]))))
    assert pairs["token_ids"] == [[2, 8, 3, 5, 3, 0, 0, 0], [2, 5, 3, 9, 3, 0, 0, 0]]
    empty = preprocessor(tf.constant([], tf.string))
    assert empty["token_ids"].shape == (0, 8)


@pytest.mark.parametrize("inputs, got", [
    ([101, 2023], "got list [101, 2023]"), (None, "got NoneType None"),
    (tf.constant([1.0]), "got a float32 tensor"), ([["a"], ["b", "c"]], "got list"),
    ((["fox"], [3]), "got list [3]")])
def test_what_is_not_text_is_one_clear_error(inputs, got):
    """TensorFlow's conversion errors ("Cannot convert [101, 2023] to EagerTensor of dtype
    string") said nothing of what a preprocessor takes."""
    with pytest.raises(TypeError, match=rf"^the preprocessor takes texts \(a string, a list "
                                        rf"or array of strings, .*\), {re.escape(got)}"):
        BertPreprocessor(TINY_VOCAB, seq_length=8)(inputs)


def test_static_and_dynamic_shapes():
    preprocessor = BertPreprocessor(TINY_VOCAB, seq_length=32)
    assert preprocessor(["fox"])["token_ids"].shape == (1, 32)
    assert preprocessor(["fox"], static_shape=False)["token_ids"].shape == (1, 8)
    long_text = " ".join(["the quick fox."] * 10)
    assert preprocessor([long_text], static_shape=False)["token_ids"].shape == (1, 32)
    dynamic = BertPreprocessor(TINY_VOCAB, seq_length=32, static_shape=False)
    assert dynamic(["the fox", "the quick fox . the quick"])["token_ids"].shape == (2, 16)


def test_properties(vocab_file):
    preprocessor = BertPreprocessor(vocab_file)
    assert preprocessor.seq_length == 128
    assert (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id,
            preprocessor.mask_id, preprocessor.unk_id) == (101, 102, 0, 103, 100)
    assert preprocessor.tokenizer.vocabulary_size() == 30522
    assert preprocessor.packer.seq_length == 128


def test_config_round_trip():
    preprocessor = BertPreprocessor(TINY_VOCAB, seq_length=12, truncation="longest_first",
                                    static_shape=False, lower_case=False)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(preprocessor)
    )
    assert isinstance(restored, BertPreprocessor)
    assert restored.get_config() == preprocessor.get_config()
    text = (["The fox", "the quick fox"], ["fox .", "the"])
    assert as_lists(restored(text)) == as_lists(preprocessor(text))


def test_tf_data_symbolic_call_and_fit_step_under_mixed_precision():
    preprocessor = BertPreprocessor(TINY_VOCAB, seq_length=8)
    texts = ["the quick fox.", "fox", "the fox", "quick"]
    dataset = (
        tf.data.Dataset.from_tensor_slices((texts, [1, 0, 1, 0]))
        .batch(2, drop_remainder=True)
        .map(lambda x, y: (preprocessor(x), y))
    )
    assert dataset.element_spec[0]["token_ids"].shape.as_list() == [2, 8]

    strings = keras.Input(shape=(), dtype="string")
    symbolic = preprocessor(strings)
    assert {name: (x.shape, x.dtype) for name, x in symbolic.items()} == {
        name: ((None, 8), "int32") for name in ("token_ids", "segment_ids", "padding_mask")
    }

    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        outputs = preprocessor(texts)
        assert {x.dtype for x in outputs.values()} == {tf.int32}
        inputs = {name: keras.Input(shape=(8,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        hidden = keras.layers.Embedding(len(TINY_VOCAB), 4)(inputs["token_ids"])
        hidden = keras.layers.GlobalAveragePooling1D()(hidden, mask=inputs["padding_mask"])
        model = keras.Model(inputs, keras.layers.Dense(2, dtype="float32")(hidden))
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=True)
        history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
        assert np.isfinite(history.history["loss"][0])
    finally:
        keras.config.set_dtype_policy(previous_policy)


def roberta_encode(seq_length, inputs):
    """RoBERTa's encodings by Hugging Face `tokenizers` on the BPE fixture: byte-level BPE,
    RobertaProcessing (`<s> A </s></s> B </s>`), longest-first truncation, `<pad>` padding."""
    tokenizers = pytest.importorskip("tokenizers", reason="reference encodings for parity")
    reference = tokenizers.ByteLevelBPETokenizer(BPE_VOCAB, BPE_MERGES, add_prefix_space=False,
                                                 trim_offsets=True)
    reference.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
    reference.enable_truncation(seq_length, strategy="longest_first")
    reference.enable_padding(length=seq_length, pad_id=1, pad_token="<pad>")
    encodings = reference.encode_batch(inputs)
    return {"token_ids": [e.ids for e in encodings],
            "segment_ids": [e.type_ids for e in encodings],
            "padding_mask": [e.attention_mask for e in encodings]}


@pytest.mark.parametrize("seq_length", [12, 64])
def test_bpe_singles_and_pairs_equal_hugging_face_roberta_encodings(lines, seq_length):
    preprocessor = BertPreprocessor(BPE_VOCAB, seq_length=seq_length,
                                    truncation="longest_first")
    assert preprocessor.tokenizer_kind == "byte_pair"
    assert isinstance(preprocessor.tokenizer, BytePairTokenizer)
    texts = [*lines, "", "a", "Hello world!"]
    singles = as_lists(preprocessor(texts))
    assert singles == roberta_encode(seq_length, texts)
    first, second = texts[0::2], texts[1::2]
    first = first[: len(second)]
    pairs = as_lists(preprocessor((first, second)))
    assert pairs == roberta_encode(seq_length, list(zip(first, second, strict=True)))
    # The layout itself: <s> A </s></s> B </s>, one token type.
    pair = as_lists(preprocessor(("a", "b"), static_shape=False))
    assert pair["token_ids"] == [0, 69, 2, 2, 70, 2, 1, 1]
    assert pair["segment_ids"] == [0] * 8
    assert pair["padding_mask"] == [1] * 6 + [0] * 2


def test_the_tokenizer_is_picked_from_the_vocabulary(tmp_path):
    kinds = {}
    kinds["vocab.txt"] = BertPreprocessor(str(DATA / "tasks" / "vocab.txt"))
    kinds["token list"] = BertPreprocessor(TINY_VOCAB)
    kinds["vocab.json"] = BertPreprocessor(BPE_VOCAB)
    # A vocab.json without merges.txt beside it takes merges=.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(BPE_VOCAB, alone / "vocab.json")
    with pytest.raises(ValueError, match="merges.txt"):
        BertPreprocessor(str(alone / "vocab.json"))
    kinds["vocab.json, merges="] = BertPreprocessor(str(alone / "vocab.json"),
                                                    merges=BPE_MERGES)
    with open(BPE_VOCAB, encoding="utf-8") as f:
        kinds["dict, merges="] = BertPreprocessor(json.load(f), merges=BPE_MERGES)
    # A checkpoint folder: vocab.json + merges.txt are preferred to vocab.txt.
    folder = tmp_path / "roberta"
    folder.mkdir()
    for path in (BPE_VOCAB, BPE_MERGES, DATA / "tasks" / "vocab.txt"):
        shutil.copy(path, folder)
    kinds["BPE folder"] = BertPreprocessor(folder)
    # A BERT folder: vocab.txt, casing from tokenizer_config.json.
    cased = tmp_path / "bert-cased"
    cased.mkdir()
    shutil.copy(DATA / "tasks" / "vocab.txt", cased)
    (cased / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    kinds["cased BERT folder"] = BertPreprocessor(str(cased))
    # Saved by HF tokenizers alone: the casing only in tokenizer.json's normalizer.
    for name, normalizer in (
            ("tokenizer.json cased", {"type": "BertNormalizer", "lowercase": False}),
            ("tokenizer.json Sequence", {"type": "Sequence", "normalizers": [
                {"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]})):
        folder_ = tmp_path / name
        folder_.mkdir()
        shutil.copy(DATA / "tasks" / "vocab.txt", folder_)
        (folder_ / "tokenizer.json").write_text(json.dumps({"normalizer": normalizer}))
        kinds[name] = BertPreprocessor(str(folder_))
    kinds["spiece.model"] = BertPreprocessor(SPIECE)
    kinds["model bytes"] = BertPreprocessor(SPIECE.read_bytes())
    # An ALBERT folder: spiece.model first of all, options from tokenizer_config.json.
    albert = tmp_path / "albert"
    shutil.copytree(folder, albert)
    shutil.copy(SPIECE, albert)
    (albert / "tokenizer_config.json").write_text(
        '{"do_lower_case": false, "keep_accents": true, "tokenizer_class": "AlbertTokenizer"}')
    kinds["ALBERT folder"] = BertPreprocessor(albert)
    assert {name: (p.tokenizer_kind, p.lower_case) for name, p in kinds.items()} == {
        "vocab.txt": ("wordpiece", True), "token list": ("wordpiece", True),
        "vocab.json": ("byte_pair", False), "vocab.json, merges=": ("byte_pair", False),
        "dict, merges=": ("byte_pair", False), "BPE folder": ("byte_pair", False),
        "cased BERT folder": ("wordpiece", False), "tokenizer.json cased": ("wordpiece", False),
        "tokenizer.json Sequence": ("wordpiece", True), "spiece.model": ("sentencepiece", True),
        "model bytes": ("sentencepiece", True), "ALBERT folder": ("sentencepiece", False),
    }
    assert isinstance(kinds["ALBERT folder"].tokenizer, SentencePieceTokenizer)
    assert kinds["ALBERT folder"].tokenizer.keep_accents
    assert not kinds["spiece.model"].tokenizer.keep_accents
    # tokenizer_config.json's do_lower_case wins over tokenizer.json's normalizer.
    (tmp_path / "tokenizer.json cased" / "tokenizer_config.json").write_text(
        '{"do_lower_case": true}')
    assert BertPreprocessor(str(tmp_path / "tokenizer.json cased")).lower_case
    # An explicit lower_case wins over the folder's.
    assert BertPreprocessor(str(cased), lower_case=True).lower_case
    texts = ["Hello world!", "the quick fox"]
    bpe = as_lists(kinds["vocab.json"](texts))
    for name in ("vocab.json, merges=", "dict, merges=", "BPE folder"):
        assert as_lists(kinds[name](texts)) == bpe, name
    # The preprocessor's vocabulary is its tokens by id, whatever the tokenizer.
    tokens = kinds["vocab.json"].vocabulary
    assert tokens[:5] == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    assert len(tokens) == kinds["vocab.json"].tokenizer.vocabulary_size()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="tokenizer.json: holds no Hugging Face tokenizer model"):
        BertPreprocessor(empty)
    (empty / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="holds no vocabulary file: looked for .*tokenizer.json"):
        BertPreprocessor(empty)
    with pytest.raises(ValueError, match="merges is only for byte-level BPE"):
        BertPreprocessor(TINY_VOCAB, merges=BPE_MERGES)


def test_bpe_is_cased_and_has_no_tflite_pipeline():
    with pytest.raises(ValueError, match="are cased"):
        BertPreprocessor(BPE_VOCAB, lower_case=True)
    assert not BertPreprocessor(BPE_VOCAB, lower_case=False).lower_case
    with pytest.raises(ValueError, match="no TFLite-compatible pipeline"):
        BertPreprocessor(BPE_VOCAB, tflite_compatible=True)


def test_bpe_texts_are_cut_to_max_text_bytes():
    preprocessor = BertPreprocessor(BPE_VOCAB, seq_length=64, max_text_bytes=9,
                                    static_shape=False)
    whole = BertPreprocessor(BPE_VOCAB, seq_length=64, static_shape=False)
    # 9 bytes of "héllo wörld" end inside "ö", which is left out.
    assert as_lists(preprocessor(["héllo wörld"])) == as_lists(whole(["héllo w"]))


def test_a_given_tokenizer_is_used_as_it_is():
    tokenizer = BertTokenizer(TINY_VOCAB, lower_case=False)
    preprocessor = BertPreprocessor(tokenizer, seq_length=8)
    assert preprocessor.tokenizer is tokenizer and not preprocessor.lower_case
    assert as_lists(preprocessor(["The fox"]))["token_ids"] == [[2, 1, 8, 3, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="disagrees"):
        BertPreprocessor(tokenizer, lower_case=True)


def keras_round_trip(preprocessor, path):
    """The preprocessor through get_config/from_config, and inside a model saved as .keras."""
    from_config = BertPreprocessor.from_config(preprocessor.get_config())
    strings = keras.Input(shape=(), dtype="string")
    model = keras.Model(strings, preprocessor(strings))
    model.save(path)
    loaded = keras.saving.load_model(path)
    return from_config, loaded


VOCABULARIES = {"wordpiece": TINY_VOCAB, "byte_pair": BPE_VOCAB, "sentencepiece": str(SPIECE)}


@pytest.mark.parametrize("kind", list(VOCABULARIES))
def test_config_and_keras_file_round_trips_for_each_tokenizer(kind, tmp_path):
    vocabulary = VOCABULARIES[kind]
    preprocessor = BertPreprocessor(vocabulary, seq_length=12, truncation="longest_first")
    from_config, loaded = keras_round_trip(preprocessor, tmp_path / "model.keras")
    assert from_config.get_config() == preprocessor.get_config()
    assert from_config.tokenizer_kind == kind
    texts = ["The quick fox.", "the fox"]
    expected = as_lists(preprocessor(texts))
    assert as_lists(from_config(texts)) == expected
    assert as_lists(loaded(tf.constant(texts))) == expected
    pairs = (["The fox", "the quick fox"], ["fox .", "the"])
    assert as_lists(from_config(pairs)) == as_lists(preprocessor(pairs))


@pytest.mark.parametrize("kind", list(VOCABULARIES))
def test_keras_file_keeps_the_vocabulary_files_as_assets(kind, tmp_path):
    import zipfile

    preprocessor = BertPreprocessor(VOCABULARIES[kind], seq_length=12)
    _, loaded = keras_round_trip(preprocessor, tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        assets = {name.rsplit("/", 1)[-1] for name in archive.namelist()
                  if name.startswith("assets/")}
        config = json.loads(archive.read("config.json"))
    expected = {"wordpiece": {"vocab.txt"}, "byte_pair": {"vocab.json", "merges.txt"},
                "sentencepiece": {"spiece.model"}}[kind]
    assert assets == expected | {"tokenizer_config.json"}
    layer = next(layer for layer in config["config"]["layers"]
                 if layer["class_name"] == "BertPreprocessor")["config"]
    tokenizer = layer["tokenizer"]["config"]
    assert layer["vocabulary"] is None
    assert all(tokenizer[key] is None for key in ("vocabulary", "merges", "model")
               if key in tokenizer)
    texts = tf.constant(["The quick fox.", "the fox"])
    assert as_lists(loaded(texts)) == as_lists(preprocessor(texts))


def test_wordpiece_config_is_unchanged():
    config = BertPreprocessor(TINY_VOCAB, seq_length=12).get_config()
    assert {k: config[k] for k in ("vocabulary", "lower_case", "tflite_compatible",
                                   "max_text_bytes")} == {
        "vocabulary": TINY_VOCAB, "lower_case": True, "tflite_compatible": False,
        "max_text_bytes": None}
    assert "merges" not in config and "tokenizer" not in config


@pytest.mark.parametrize("kind", list(VOCABULARIES))
def test_written_vocabulary_files_rebuild_the_preprocessor(kind, tmp_path):
    from keras_bert_core.text.vocabulary.files import VOCABULARY_FILES, write_vocabulary_files

    preprocessor = BertPreprocessor(VOCABULARIES[kind], seq_length=12, lower_case=False)
    names = list(write_vocabulary_files(preprocessor.tokenizer, tmp_path))
    assert names == [*VOCABULARY_FILES[kind], "tokenizer_config.json"]
    rebuilt = BertPreprocessor(tmp_path, seq_length=12)
    assert without_names(rebuilt.get_config()) == without_names(preprocessor.get_config())


def without_names(config):
    """A layer config without the layers' names (numbered in creation order)."""
    if isinstance(config, dict):
        return {k: without_names(v) for k, v in config.items() if k != "name"}
    return config


def albert_encode(seq_length, inputs):
    """ALBERT's packing by Hugging Face `tokenizers` (AlbertTokenizerFast's template
    `[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1`, longest-first truncation, `<pad>` padding) of
    piece ids given as space-separated numbers."""
    tokenizers = pytest.importorskip("tokenizers", reason="reference packing")
    reference = tokenizers.Tokenizer(tokenizers.models.WordLevel(
        {str(i): i for i in range(2000)}, unk_token="1"))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    reference.post_processor = tokenizers.processors.TemplateProcessing(
        single="2 $A 3", pair="2:0 $A:0 3:0 $B:1 3:1", special_tokens=[("2", 2), ("3", 3)])
    reference.enable_truncation(seq_length, strategy="longest_first")
    reference.enable_padding(length=seq_length, pad_id=0, pad_token="0")
    encodings = reference.encode_batch(inputs)
    return {"token_ids": [e.ids for e in encodings],
            "segment_ids": [e.type_ids for e in encodings],
            "padding_mask": [e.attention_mask for e in encodings]}


@pytest.fixture(scope="module")
def sentencepiece_reference():
    """Texts and the `sentencepiece` library's ids of them after ALBERT's uncased
    preprocessing, from the fixture of tests/text/sentencepiece/test_sentencepiece_tokenizer.py
    (a sample; texts with characters newer than the fixture's Unicode version left out)."""
    stored = np.load(DATA / "sentencepiece" / "reference_ids.npz")
    with open(DATA / "sentencepiece" / "reference_texts.jsonl", encoding="utf-8") as f:
        texts = tokenizer_corpus() + [json.loads(line) for line in f]
    newer = (set() if str(stored["unidata_version"]) == unicodedata.unidata_version
             else {chr(c) for c in stored["unassigned"]})
    ids = np.split(stored["uncased_ids"].astype(int),
                   np.cumsum(stored["uncased_lengths"])[:-1])
    pairs = [(texts[i], row.tolist()) for i, row in zip(stored["uncased_lines"], ids,
                                                        strict=True)]
    pairs = [(text, row) for text, row in pairs[::20] if not newer.intersection(text)]
    return [t for t, _ in pairs], [r for _, r in pairs]


@pytest.mark.parametrize("seq_length", [12, 48])
def test_sentencepiece_packs_the_library_ids_as_albert(sentencepiece_reference, seq_length):
    texts, ids = sentencepiece_reference
    # The TFLite-compatible route gives the library's ids exactly (the default one breaks
    # rare ties between equally scored pieces otherwise; see SentencePieceTokenizer).
    preprocessor = BertPreprocessor(SPIECE, seq_length=seq_length, truncation="longest_first",
                                    tflite_compatible=True)
    assert (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id) == (2, 3, 0)
    spelled = [" ".join(map(str, row)) for row in ids]
    assert as_lists(preprocessor(texts)) == albert_encode(seq_length, spelled)
    first, second = texts[0::2], texts[1::2]
    first = first[: len(second)]
    pairs = list(zip(spelled[0::2], spelled[1::2], strict=False))
    assert as_lists(preprocessor((first, second))) == albert_encode(seq_length, pairs)
    pair = as_lists(preprocessor(("a", "b"), static_shape=False))
    assert pair["token_ids"][0] == 2 and pair["token_ids"].count(3) == 2
    assert pair["segment_ids"][: pair["token_ids"].index(3) + 1] == [0] * (
        pair["token_ids"].index(3) + 1)


def test_sentencepiece_texts_are_cut_in_both_pipelines():
    whole = BertPreprocessor(SPIECE, seq_length=32, static_shape=False)
    for tflite_compatible in (False, True):
        cut = BertPreprocessor(SPIECE, seq_length=32, max_text_bytes=9, static_shape=False,
                               tflite_compatible=tflite_compatible)
        assert cut.tokenizer.max_text_bytes == 9
        assert as_lists(cut(["héllo wörld"])) == as_lists(whole(["héllo w"]))
    # Configs saved when the preprocessor cut texts for the SentencePiece tokenizer.
    config = BertPreprocessor(SPIECE, max_text_bytes=9).get_config()
    del config["tokenizer"]["config"]["max_text_bytes"]
    assert BertPreprocessor.from_config(config).tokenizer.max_text_bytes == 9
    tflite = whole.with_options(tflite_compatible=True)
    assert tflite.tflite_compatible and tflite.tokenizer.tflite_compatible


def test_a_tokenizer_builds_its_graph_once_for_every_graph_that_tokenizes(monkeypatch):
    # Each graph calls the one traced function: a pair's two texts, a second tf.function.
    preprocessor = BertPreprocessor(TINY_VOCAB, seq_length=8)
    tokenizer = preprocessor.tokenizer
    builds = []
    tokenize = type(tokenizer)._tokenize
    monkeypatch.setattr(type(tokenizer), "_tokenize",
                        lambda self, *args: builds.append(args[1:]) or tokenize(self, *args))
    pairs = (tf.constant(["the quick fox", "fox"]), tf.constant(["the fox .", "quick"]))
    traced = [tf.function(preprocessor)(pairs) for _ in range(2)]
    assert builds == [(False,)]
    eager = preprocessor(pairs)  # eagerly, op by op, as before
    for outputs in traced:
        assert as_lists(outputs) == as_lists(eager)
    builds.clear()
    tf.function(tokenizer.tokenize_with_offsets)(pairs[0])
    assert builds == [(True,)]
