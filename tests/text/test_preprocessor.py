"""BertPreprocessor: parity with Hugging Face encodings, input forms, shapes, Keras use."""

import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.text import BertPreprocessor

CORPUS = pathlib.Path(__file__).with_name("data") / "tokenizer_corpus.jsonl"
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
