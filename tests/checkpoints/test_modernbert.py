"""Hugging Face ModernBERT checkpoints: parity with PyTorch (fixtures written by
make_modernbert_fixtures.py beside this file)."""

import json
import os

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint

DATA = os.path.join(os.path.dirname(__file__), "data", "modernbert")
TOLERANCE = 1e-4


def _reference(name):
    return np.load(os.path.join(DATA, name, "reference.npz"))


def _inputs(ids, mask):
    return {"token_ids": ids.astype("int32"), "segment_ids": np.zeros_like(ids, "int32"),
            "padding_mask": mask.astype("int32")}


def _max_diff(actual, expected):
    return float(np.abs(np.asarray(actual) - expected).max())


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
    reference = _reference("mlm")
    outputs = encoder(_inputs(reference["input_ids"], reference["attention_mask"]))
    real = reference["attention_mask"].astype(bool)
    assert _max_diff(np.asarray(outputs["sequence_output"])[real],
                     reference["sequence_output"]) <= TOLERANCE


def test_encoder_matches_pytorch_on_a_text_of_many_windows(mlm_encoder):
    encoder, _ = mlm_encoder
    reference = _reference("mlm")
    ids = reference["long_input_ids"][None]
    assert ids.shape[1] >= 1000
    outputs = encoder.predict(_inputs(ids, np.ones_like(ids)), verbose=0)
    assert _max_diff(outputs["sequence_output"][0, reference["long_positions"]],
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
