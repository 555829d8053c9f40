"""keras-hub BertBackbone presets: parity with keras-hub's own forward pass."""

import json

import numpy as np
import pytest

from keras_bert_core.checkpoints import CheckpointMismatchError, detect_format, load_checkpoint

keras_hub = pytest.importorskip("keras_hub", reason="keras-hub is not installed")


def _backbone():
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=4, hidden_dim=64, intermediate_dim=128,
        max_sequence_length=64)
    rng = np.random.default_rng(0)
    for variable in backbone.weights:
        variable.assign(rng.normal(scale=0.2, size=variable.shape) + (variable.path.endswith(
            "/gamma")))
    return backbone


def test_parity_with_keras_hub(tmp_path, batch, run):
    theirs = _backbone()
    theirs.save_to_preset(str(tmp_path))
    assert detect_format(tmp_path) == "keras_hub"
    ours, config = load_checkpoint(tmp_path)
    assert config.hidden_act == "gelu_approximate" and config.num_heads == 4
    expected = {name: np.asarray(value) for name, value in theirs(batch).items()}
    actual = run(ours, batch)
    diff = max(np.abs(actual[name] - expected[name]).max() for name in actual)
    print(f"keras-hub BertBackbone: max abs diff {diff:.2e}")
    assert diff <= 1e-5
    # The key bias shifts all scores of a query equally, so outputs cannot check it.
    np.testing.assert_array_equal(
        np.asarray(ours.blocks[1].attention.key.bias),
        np.asarray(theirs.get_layer("transformer_layer_1")._self_attention_layer._key_dense.bias)
        .reshape(-1))


def test_wrong_config_is_reported(tmp_path, tiny_config):
    _backbone().save_to_preset(str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(tmp_path, config=type(tiny_config)(
            **{**tiny_config.to_dict(), "num_layers": 1}))
    assert info.value.unexpected[0] == "transformer_layer_1/feedforward_intermediate_dense/bias"
    assert config["class_name"] == "BertBackbone"
