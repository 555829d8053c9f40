"""Format detection, `.keras` files, `convert_checkpoint`, and paths that match nothing."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core import BertEncoder
from keras_bert_core.checkpoints import (
    CheckpointError,
    convert_checkpoint,
    detect_format,
    load_checkpoint,
    load_pretrainer,
    read_pretraining_head_weights,
    save_google_research_checkpoint,
)
from keras_bert_core.models.encoder import encoder_inputs


def test_keras_file_with_an_encoder(tmp_path, tiny_config, random_encoder, batch, run):
    encoder = random_encoder(tiny_config)
    encoder.save(tmp_path / "encoder.keras")
    assert detect_format(tmp_path / "encoder.keras") == "keras"
    loaded, config = load_checkpoint(tmp_path / "encoder.keras")
    assert isinstance(loaded, BertEncoder) and config == tiny_config
    np.testing.assert_array_equal(run(loaded, batch)["sequence_output"],
                                  run(encoder, batch)["sequence_output"])
    with pytest.raises(ValueError, match="carries its own config"):
        load_checkpoint(tmp_path / "encoder.keras", config=tiny_config)


def test_keras_file_with_a_task_model_inside(tmp_path, tiny_config, random_encoder, batch, run):
    encoder = random_encoder(tiny_config)
    inputs = encoder_inputs()
    logits = keras.layers.Dense(3, name="classifier")(encoder(inputs)["pooled_output"])
    keras.Model(inputs, logits).save(tmp_path / "task.keras")
    loaded, _ = load_checkpoint(tmp_path / "task.keras")
    np.testing.assert_array_equal(run(loaded, batch)["pooled_output"],
                                  run(encoder, batch)["pooled_output"])


def test_keras_file_without_an_encoder(tmp_path):
    inputs = keras.Input((4,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(tmp_path / "other.keras")
    with pytest.raises(CheckpointError, match="no BertEncoder inside"):
        load_checkpoint(tmp_path / "other.keras")


def test_corrupt_keras_file_names_the_file(tmp_path):
    (tmp_path / "broken.keras").write_bytes(b"not a zip file")
    with pytest.raises(CheckpointError, match=r"broken\.keras: cannot load"):
        load_checkpoint(tmp_path / "broken.keras")


def test_keras_file_with_a_pretrainer(tmp_path, tiny_config, random_encoder, batch, run):
    from keras_bert_core.models.pretrainer import BertPretrainer

    pretrainer = BertPretrainer(random_encoder(tiny_config))
    pretrainer.save(tmp_path / "pretrainer.keras")
    # Its encoder is an attribute, not a layer of its graph (the graph runs the encoder's
    # layers itself); the encoder loads from it all the same.
    encoder, _ = load_checkpoint(tmp_path / "pretrainer.keras")
    np.testing.assert_array_equal(run(encoder, batch)["sequence_output"],
                                  run(pretrainer.encoder, batch)["sequence_output"])
    loaded, config = load_pretrainer(tmp_path / "pretrainer.keras")
    assert isinstance(loaded, BertPretrainer) and config == tiny_config
    for name, value in pretrainer.get_head_weights().items():
        np.testing.assert_array_equal(loaded.get_head_weights()[name], value)
    with pytest.raises(CheckpointError, match="keras checkpoints is not supported"):
        read_pretraining_head_weights(tmp_path / "pretrainer.keras")


def test_convert_checkpoint_writes_a_keras_file(tmp_path, tiny_config, random_encoder, batch,
                                                run):
    encoder = random_encoder(tiny_config)
    save_google_research_checkpoint(encoder, tmp_path / "tf1")
    with pytest.raises(ValueError, match=r"must end in \.keras"):
        convert_checkpoint(tmp_path / "tf1", tmp_path / "encoder.h5")
    convert_checkpoint(tmp_path / "tf1", tmp_path / "encoder.keras")
    loaded, config = load_checkpoint(tmp_path / "encoder.keras")
    assert config == tiny_config
    np.testing.assert_array_equal(run(loaded, batch)["sequence_output"],
                                  run(encoder, batch)["sequence_output"])


@pytest.mark.parametrize("make", ["missing", "empty_folder", "text_file"])
def test_a_path_that_matches_nothing_says_what_was_looked_for(tmp_path, make):
    path = tmp_path / "thing"
    if make == "empty_folder":
        path.mkdir()
    elif make == "text_file":
        path.write_text("hello")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert message.startswith(f"{path}: no BERT checkpoint found")
    for looked_for in (".keras", "model.safetensors", "bert_model.ckpt", "model.weights.h5",
                       "Model Garden"):
        assert looked_for in message
    # A mistyped path says so (it read as a file or folder of an unknown format).
    assert message.endswith(f"; there is no file or folder at {path}") == (make == "missing")


def test_foreign_name_based_checkpoint(tmp_path):
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "model.ckpt"), tensor_names=["gpt/wte"],
                      shape_and_slices=[""], tensors=[tf.zeros((4, 2))])
    with pytest.raises(CheckpointError, match=r"neither google-research.*'gpt/wte'"):
        load_checkpoint(tmp_path)


def test_several_checkpoints_in_one_folder_is_ambiguous(tmp_path, tiny_config, random_encoder):
    encoder = random_encoder(tiny_config)
    save_google_research_checkpoint(encoder, tmp_path)
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "other.ckpt"), tensor_names=["x"],
                      shape_and_slices=[""], tensors=[tf.zeros(2)])
    with pytest.raises(CheckpointError, match="several TensorFlow checkpoints"):
        load_checkpoint(tmp_path)
    assert detect_format(tmp_path / "bert_model.ckpt") == "google_research"
