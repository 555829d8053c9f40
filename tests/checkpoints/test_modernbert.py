"""Hugging Face ModernBERT checkpoints: parity with PyTorch (fixtures written by
make_modernbert_fixtures.py beside this file)."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint, load_pretrainer
from tests.checkpoints.parity import encoder_inputs, max_diff, read_reference

DATA = os.path.join(os.path.dirname(__file__), "data", "modernbert")
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def mlm_encoder():
    return load_checkpoint(os.path.join(DATA, "mlm"))


def test_config_reads_modernbert_settings(mlm_encoder):
    _, config = mlm_encoder
    assert (config.family, config.position_embedding, config.use_bias) == (
        "modernbert", "rotary", False)
    assert (config.local_attention_window, config.global_attention_every) == (16, 3)
    assert [config.is_global_layer(i) for i in range(4)] == [True, False, False, True]
    assert (config.rotary_theta, config.local_rotary_theta) == (160000.0, 10000.0)


def test_encoder_matches_pytorch_on_texts_and_pairs(mlm_encoder):
    encoder, _ = mlm_encoder
    reference = read_reference(DATA, "mlm")
    outputs = encoder(encoder_inputs(reference["input_ids"], reference["attention_mask"]))
    real = reference["attention_mask"].astype(bool)
    assert max_diff(np.asarray(outputs["sequence_output"])[real],
                     reference["sequence_output"]) <= TOLERANCE


def test_encoder_matches_pytorch_on_a_text_of_many_windows(mlm_encoder):
    encoder, _ = mlm_encoder
    reference = read_reference(DATA, "mlm")
    ids = reference["long_input_ids"][None]
    assert ids.shape[1] >= 1000
    outputs = encoder.predict(encoder_inputs(ids, np.ones_like(ids)), verbose=0)
    assert max_diff(outputs["sequence_output"][0, reference["long_positions"]],
                     reference["long_sequence_output"]) <= TOLERANCE


def test_presets_have_transformers_parameter_counts():
    """Counted on 1- and 2-layer encoders with a 64-token vocabulary at the presets' widths
    (initializing the full models takes a minute): every layer after the first adds what the
    second does, and every word a row of the table."""
    with open(os.path.join(DATA, "param_counts.json"), encoding="utf-8") as f:
        counts = json.load(f)
    for name, expected in counts.items():
        config = kbc.BertConfig.preset(name)
        one, two = (kbc.BertEncoder(kbc.BertConfig.preset(name, num_layers=layers,
                                                          vocab_size=64)).count_params()
                    for layers in (1, 2))
        total = (one + (config.num_layers - 1) * (two - one)
                 + (config.vocab_size - 64) * config.hidden_size)
        assert total == expected["num_parameters"], name


def test_last_layer_at_some_positions_equals_the_full_encoder():
    # The classifier's 3 layers end with a local one: its queries' window rows alone.
    encoder, config = load_checkpoint(os.path.join(DATA, "classifier"))
    assert not config.is_global_layer(2)
    reference = read_reference(DATA, "classifier")
    inputs = encoder_inputs(reference["input_ids"], reference["attention_mask"])
    full = np.asarray(encoder(inputs)["sequence_output"])
    positions = np.tile(np.array([[0, 3, 9]], "int32"), (len(full), 1))
    some = encoder.encode(inputs, output_positions=positions)["sequence_output"]
    assert max_diff(some, full[:, [0, 3, 9]]) <= 1e-5


def test_masked_lm_head_matches_pytorch():
    reference = read_reference(DATA, "mlm")
    pretrainer, _ = load_pretrainer(os.path.join(DATA, "mlm"))
    assert pretrainer.next_sentence is None
    encoded = pretrainer.encoder(encoder_inputs(reference["input_ids"],
                                                reference["attention_mask"]))
    rows, columns = reference["mlm_positions"].T
    states = np.asarray(encoded["sequence_output"])[rows, columns]
    logits = pretrainer.masked_lm(states[None])[0]
    assert max_diff(logits, reference["mlm_logits"]) <= TOLERANCE


def test_mean_pooling_classifier_head_matches_pytorch():
    folder = os.path.join(DATA, "classifier")
    reference = read_reference(DATA, "classifier")
    encoder, config = load_checkpoint(folder)
    assert config.classifier_pooling == "mean"
    model = kbc.BertClassifier(encoder, num_classes=3)
    state = load_file(os.path.join(folder, "model.safetensors"))
    model.head.hidden.kernel.assign(state["head.dense.weight"].T)
    model.head.hidden_norm.gamma.assign(state["head.norm.weight"])
    model.head.dense.kernel.assign(state["classifier.weight"].T)
    model.head.dense.bias.assign(state["classifier.bias"])
    logits = model.predict(encoder_inputs(reference["input_ids"], reference["attention_mask"]),
                           verbose=0)
    assert max_diff(logits, reference["logits"]) <= TOLERANCE


def test_tokenizer_json_gives_hugging_face_ids_and_bert_template():
    reference = read_reference(DATA, "mlm")
    width = reference["input_ids"].shape[1]
    preprocessor = kbc.BertPreprocessor(os.path.join(DATA, "mlm"), seq_length=width)
    assert (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id) == (501, 502, 503)
    texts_a, texts_b = reference["texts_a"].tolist(), reference["texts_b"].tolist()
    singles = [i for i, b in enumerate(texts_b) if not b]
    pairs = [i for i, b in enumerate(texts_b) if b]
    ids = np.concatenate([
        preprocessor([texts_a[i] for i in singles])["token_ids"],
        preprocessor(([texts_a[i] for i in pairs], [texts_b[i] for i in pairs]))["token_ids"]])
    # Text spelling "[MASK]" is HF's mask token, ours its characters (as for RoBERTa).
    plain = ["[MASK]" not in texts_a[i] + texts_b[i] for i in singles + pairs]
    np.testing.assert_array_equal(np.asarray(ids)[plain],
                                  reference["input_ids"][singles + pairs][plain])
    long = kbc.BertPreprocessor(os.path.join(DATA, "mlm"), seq_length=2048,
                                static_shape=False)(str(reference["long_text"]))
    expected = reference["long_input_ids"]
    np.testing.assert_array_equal(np.asarray(long["token_ids"])[:len(expected)], expected)
    assert int(np.asarray(long["padding_mask"]).sum()) == len(expected)


def test_embedder_mean_pools_and_normalizes_pytorchs_states(mlm_encoder):
    encoder, _ = mlm_encoder
    reference = read_reference(DATA, "mlm")
    mask = reference["attention_mask"]
    vectors = kbc.BertEmbedder(encoder).predict(
        encoder_inputs(reference["input_ids"], mask), verbose=0)
    # The reference's states sit at its real tokens, row after row.
    rows = np.split(reference["sequence_output"], np.cumsum(mask.sum(axis=1))[:-1])
    means = np.stack([row.mean(axis=0) for row in rows])
    expected = means / np.linalg.norm(means, axis=1, keepdims=True)
    assert max_diff(vectors, expected) <= TOLERANCE
