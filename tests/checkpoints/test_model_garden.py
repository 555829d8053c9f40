"""TF Model Garden BertEncoder TF2 checkpoints: parity with Model Garden's own forward pass."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core import BertConfig
from keras_bert_core.checkpoints import (
    CheckpointError,
    CheckpointMismatchError,
    detect_format,
    load_checkpoint,
)

networks = pytest.importorskip(
    "official.nlp.modeling.networks", reason="tf-models-official (Model Garden) is not installed")
mg_models = pytest.importorskip("official.nlp.modeling.models")

EXACT_GELU = lambda x: tf.nn.gelu(x, approximate=False)  # noqa: E731  (BERT's erf GELU)
TINY = {"vocab_size": 100, "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4,
        "inner_dim": 128, "max_sequence_length": 64, "type_vocab_size": 2}


def _model_garden_encoder(cls=None, activation=EXACT_GELU, **overrides):
    """A Model Garden encoder, built and with every weight random."""
    encoder = (cls or networks.BertEncoder)(**{**TINY, **overrides}, activation=activation,
                                            dict_outputs=True)
    ids = np.ones((1, 4), np.int32)
    encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids * 0})
    rng = np.random.default_rng(0)
    encoder.set_weights([rng.normal(scale=0.2, size=w.shape) + (w == 1).all()
                         for w in encoder.get_weights()])
    return encoder


def _model_garden_outputs(encoder, batch):
    out = encoder({"input_word_ids": batch["token_ids"], "input_mask": batch["padding_mask"],
                   "input_type_ids": batch["segment_ids"]})
    return {name: np.asarray(out[name]) for name in ("sequence_output", "pooled_output")}


def _assert_parity(run, ours, theirs, batch, label):
    expected, actual = _model_garden_outputs(theirs, batch), run(ours, batch)
    diffs = {name: np.abs(actual[name] - expected[name]).max() for name in expected}
    print(f"Model Garden {label}: max abs diff " +
          ", ".join(f"{name} {diff:.2e}" for name, diff in diffs.items()))
    assert max(diffs.values()) <= 1e-5


@pytest.mark.parametrize("cls_name", ["BertEncoder", "BertEncoderV2"])
def test_parity_with_an_inferred_config(tmp_path, batch, run, cls_name):
    theirs = _model_garden_encoder(getattr(networks, cls_name))
    prefix = tf.train.Checkpoint(encoder=theirs).save(str(tmp_path / "ckpt"))
    assert detect_format(tmp_path) == "model_garden"
    ours, config = load_checkpoint(tmp_path)
    assert config == BertConfig(vocab_size=100, hidden_size=64, num_layers=2, num_heads=4,
                                intermediate_size=128, max_position_embeddings=64)
    _assert_parity(run, ours, theirs, batch, cls_name)
    # The key bias shifts all scores of a query equally, so outputs cannot check it.
    np.testing.assert_array_equal(
        np.asarray(ours.blocks[1].attention.key.bias),
        theirs._transformer_layers[1]._attention_layer._key_dense.bias.numpy().reshape(-1))
    assert load_checkpoint(prefix)[1] == config


def test_encoder_inside_a_task_model(tmp_path, batch, run):
    theirs = _model_garden_encoder()
    classifier = mg_models.BertClassifier(network=theirs, num_classes=3)
    tf.train.Checkpoint(model=classifier).save(str(tmp_path / "ckpt"))
    ours, _ = load_checkpoint(tmp_path)
    _assert_parity(run, ours, theirs, batch, "encoder inside BertClassifier")


def test_factorized_embeddings(tmp_path, batch, run):
    theirs = _model_garden_encoder(embedding_width=32)
    tf.train.Checkpoint(encoder=theirs).save(str(tmp_path / "ckpt"))
    ours, config = load_checkpoint(tmp_path)
    assert config.embedding_size == 32
    _assert_parity(run, ours, theirs, batch, "embedding_width=32")


def test_config_beside_the_checkpoint_wins(tmp_path, batch, run):
    theirs = _model_garden_encoder(activation=lambda x: tf.nn.gelu(x, approximate=True))
    tf.train.Checkpoint(encoder=theirs).save(str(tmp_path / "ckpt"))
    config = BertConfig(vocab_size=100, hidden_size=64, num_layers=2, num_heads=4,
                        intermediate_size=128, max_position_embeddings=64,
                        hidden_act="gelu_approximate")
    config.to_json(tmp_path / "bert_config.json")
    ours, loaded_config = load_checkpoint(tmp_path)
    assert loaded_config.hidden_act == "gelu_approximate"
    _assert_parity(run, ours, theirs, batch, "approximate GELU via bert_config.json")


def test_wrong_config_lists_mis_shaped_weights(tmp_path):
    tf.train.Checkpoint(encoder=_model_garden_encoder()).save(str(tmp_path / "ckpt"))
    wrong = BertConfig(vocab_size=100, hidden_size=64, num_layers=3, num_heads=8,
                       intermediate_size=128, max_position_embeddings=64)
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(tmp_path, config=wrong)
    error = info.value
    assert ("encoder/_transformer_layers/0/_attention_layer/_query_dense/kernel: checkpoint "
            "has [64, 4, 16], the model expects [64, 8, 8]") in error.mis_shaped
    assert "encoder/_transformer_layers/2/_output_layer_norm/gamma [64]" in error.missing
    assert len(error.missing) == 16 and not error.unexpected


def test_object_checkpoint_without_an_encoder(tmp_path):
    tf.train.Checkpoint(step=tf.Variable(3)).save(str(tmp_path / "ckpt"))
    with pytest.raises(CheckpointError, match="without a Model Garden BertEncoder"):
        load_checkpoint(tmp_path)
