"""google-research/bert TF1 checkpoints: names, round trip, heads, mismatches, corruption."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core import BertConfig
from keras_bert_core.checkpoints import (
    CheckpointError,
    CheckpointMismatchError,
    detect_format,
    load_checkpoint,
    load_pretrainer,
    read_pretraining_head_weights,
    save_google_research_checkpoint,
)

HIDDEN = 64


def _heads(rng, config):
    return {
        "mlm/transform/kernel": rng.normal(size=(HIDDEN, HIDDEN)),
        "mlm/transform/bias": rng.normal(size=HIDDEN),
        "mlm/layer_norm/gamma": 1 + rng.normal(size=HIDDEN),
        "mlm/layer_norm/beta": rng.normal(size=HIDDEN),
        "mlm/output_bias": rng.normal(size=config.vocab_size),
        "nsp/kernel": rng.normal(size=(HIDDEN, 2)),
        "nsp/bias": rng.normal(size=2),
    }


def _write(prefix, tensors):
    """A TF1-style checkpoint holding exactly `tensors`, by name."""
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors),
                      shape_and_slices=[""] * len(tensors),
                      tensors=[tf.constant(np.asarray(v, np.float32)) for v in tensors.values()])


def _checkpoint_tensors(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def test_writes_the_google_research_names(tmp_path, tiny_config, random_encoder):
    encoder = random_encoder(tiny_config)
    prefix = save_google_research_checkpoint(
        encoder, tmp_path, heads=_heads(np.random.default_rng(0), tiny_config))
    shapes = dict(tf.train.list_variables(prefix))
    expected = {"bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings",
                "bert/embeddings/position_embeddings", "bert/embeddings/LayerNorm/gamma",
                "bert/embeddings/LayerNorm/beta", "bert/pooler/dense/kernel",
                "bert/pooler/dense/bias", "cls/predictions/transform/dense/kernel",
                "cls/predictions/transform/dense/bias", "cls/predictions/transform/LayerNorm/gamma",
                "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias",
                "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"}
    for layer in range(tiny_config.num_layers):
        for dense in ("attention/self/query", "attention/self/key", "attention/self/value",
                      "attention/output/dense", "intermediate/dense", "output/dense"):
            expected |= {f"bert/encoder/layer_{layer}/{dense}/kernel",
                         f"bert/encoder/layer_{layer}/{dense}/bias"}
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            expected |= {f"bert/encoder/layer_{layer}/{norm}/gamma",
                         f"bert/encoder/layer_{layer}/{norm}/beta"}
    assert set(shapes) == expected
    assert shapes["cls/seq_relationship/output_weights"] == [2, HIDDEN]
    assert shapes["bert/encoder/layer_0/intermediate/dense/kernel"] == [HIDDEN, 128]
    assert BertConfig.from_json(tmp_path / "bert_config.json") == tiny_config


@pytest.mark.parametrize("where", ["folder", "prefix", "index"])
def test_round_trip_reproduces_the_outputs(tmp_path, tiny_config, random_encoder, batch, run,
                                           where):
    encoder = random_encoder(tiny_config)
    prefix = save_google_research_checkpoint(encoder, tmp_path)
    path = {"folder": tmp_path, "prefix": prefix, "index": prefix + ".index"}[where]
    assert detect_format(path) == "google_research"
    loaded, config = load_checkpoint(path)
    assert config == tiny_config
    expected, actual = run(encoder, batch), run(loaded, batch)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])


def test_head_weights_round_trip_in_keras_layout(tmp_path, tiny_config, random_encoder):
    heads = _heads(np.random.default_rng(3), tiny_config)
    save_google_research_checkpoint(random_encoder(tiny_config), tmp_path, heads=heads)
    read = read_pretraining_head_weights(tmp_path)
    assert set(read) == set(heads)
    for name, value in heads.items():
        np.testing.assert_allclose(read[name], value, rtol=1e-6)
    # Stored the google-research way, [2, hidden], so the reader must transpose it back.
    stored = _checkpoint_tensors(os.path.join(tmp_path, "bert_model.ckpt"))
    np.testing.assert_allclose(stored["cls/seq_relationship/output_weights"].T,
                               heads["nsp/kernel"], rtol=1e-6)


def test_encoder_only_checkpoint_has_no_heads(tmp_path, tiny_config, random_encoder):
    save_google_research_checkpoint(random_encoder(tiny_config), tmp_path)
    assert read_pretraining_head_weights(tmp_path) is None


def test_load_pretrainer_restores_both_heads(tmp_path, tiny_config, random_encoder, batch):
    from keras_bert_core.models.pretrainer import BertPretrainer

    original = BertPretrainer(random_encoder(tiny_config))
    heads = _heads(np.random.default_rng(4), tiny_config)
    original.set_head_weights(heads)
    save_google_research_checkpoint(original.encoder, tmp_path, heads=heads)
    loaded, config = load_pretrainer(tmp_path)
    assert config == tiny_config
    inputs = {**batch, "masked_positions": np.array([[1, 2], [3, 0], [1, 1]], "int32")}
    expected, actual = original(inputs), loaded(inputs)
    for name in ("mlm", "nsp"):
        np.testing.assert_allclose(np.asarray(actual[name]), np.asarray(expected[name]),
                                   atol=1e-5)


def test_optimizer_slots_and_other_scopes_are_ignored(tmp_path, tiny_config, random_encoder,
                                                      batch, run):
    encoder = random_encoder(tiny_config)
    tensors = _checkpoint_tensors(save_google_research_checkpoint(encoder, tmp_path / "src"))
    tensors["bert/pooler/dense/kernel/adam_m"] = np.zeros((HIDDEN, HIDDEN))
    tensors["global_step"] = np.zeros(())
    tensors["output_weights"] = np.zeros((3, HIDDEN))  # a fine-tuned classifier's layer
    os.makedirs(tmp_path / "dst")
    _write(str(tmp_path / "dst" / "model.ckpt-100"), tensors)
    loaded, _ = load_checkpoint(tmp_path / "dst" / "model.ckpt-100", config=tiny_config)
    np.testing.assert_array_equal(run(loaded, batch)["pooled_output"],
                                  run(encoder, batch)["pooled_output"])


def test_mismatch_names_every_missing_unexpected_and_mis_shaped_weight(
        tmp_path, tiny_config, random_encoder):
    tensors = _checkpoint_tensors(
        save_google_research_checkpoint(random_encoder(tiny_config), tmp_path / "src"))
    del tensors["bert/encoder/layer_1/output/dense/kernel"]
    tensors["bert/encoder/layer_2/output/dense/bias"] = np.zeros(HIDDEN)
    tensors["bert/pooler/dense/kernel"] = np.zeros((HIDDEN, 32))
    os.makedirs(tmp_path / "dst")
    _write(str(tmp_path / "dst" / "bert_model.ckpt"), tensors)
    tiny_config.to_json(tmp_path / "dst" / "bert_config.json")
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(tmp_path / "dst")
    error = info.value
    assert error.missing == ["bert/encoder/layer_1/output/dense/kernel [128, 64]"]
    assert error.unexpected == ["bert/encoder/layer_2/output/dense/bias"]
    assert error.mis_shaped == [
        "bert/pooler/dense/kernel: checkpoint has [64, 32], the model expects [64, 64]"]
    message = str(error)
    assert message.startswith(str(tmp_path / "dst" / "bert_model.ckpt"))
    for line in error.missing + error.unexpected + error.mis_shaped:
        assert line in message


def test_wrong_hidden_size_lists_the_mis_shaped_weights(tmp_path, tiny_config, random_encoder):
    save_google_research_checkpoint(random_encoder(tiny_config), tmp_path)
    wider = BertConfig(**{**tiny_config.to_dict(), "hidden_size": 128})
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(tmp_path, config=wider)
    assert not info.value.missing and not info.value.unexpected
    assert ("bert/embeddings/word_embeddings: checkpoint has [100, 64], the model expects "
            "[100, 128]") in info.value.mis_shaped
    # All 39 weights have a hidden axis but the intermediate biases [128], one per layer.
    assert len(info.value.mis_shaped) == 39 - tiny_config.num_layers


def test_missing_config_says_what_to_add(tmp_path, tiny_config, random_encoder, batch, run):
    encoder = random_encoder(tiny_config)
    save_google_research_checkpoint(encoder, tmp_path)
    os.remove(tmp_path / "bert_config.json")
    with pytest.raises(CheckpointError, match="bert_config.json"):
        load_checkpoint(tmp_path)
    loaded, _ = load_checkpoint(tmp_path, config=tiny_config)
    np.testing.assert_array_equal(run(loaded, batch)["sequence_output"],
                                  run(encoder, batch)["sequence_output"])


def test_garbage_in_the_data_file_names_the_file(tmp_path, tiny_config, random_encoder):
    prefix = save_google_research_checkpoint(random_encoder(tiny_config), tmp_path)
    data = prefix + ".data-00000-of-00001"
    content = bytearray(open(data, "rb").read())
    content[100:400] = os.urandom(300)
    with open(data, "wb") as f:
        f.write(content)
    with pytest.raises(CheckpointError, match="data-00000-of-00001"):
        load_checkpoint(tmp_path)


def test_corrupt_index_names_the_file(tmp_path, tiny_config, random_encoder):
    prefix = save_google_research_checkpoint(random_encoder(tiny_config), tmp_path)
    with open(prefix + ".index", "wb") as f:
        f.write(b"not an index")
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt\.index"):
        load_checkpoint(tmp_path)
