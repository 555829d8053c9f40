"""keras-hub `BertBackbone` presets: a folder written by `backbone.save_to_preset(folder)`.

keras-hub restores its own backbone (it is needed for this format only); the weights are
then copied over by variable path. keras-hub's BERT uses the tanh-approximate GELU.
"""

from __future__ import annotations

import json
import os

import numpy as np

from keras_bert_core.checkpoints.readers import ArrayReader, describe_error
from keras_bert_core.checkpoints.weights import (
    assign_checked,
    einsum_source,
    encoder_variables,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError
from keras_bert_core.extras import require
from keras_bert_core.models import BertEncoder

_TOP = {
    "embeddings/word_embeddings": "token_embedding/embeddings",
    "embeddings/position_embeddings": "position_embedding/embeddings",
    "embeddings/token_type_embeddings": "segment_embedding/embeddings",
    "embeddings/LayerNorm/": "embeddings_layer_norm/",
    "pooler/dense/": "pooled_dense/",
}
_BLOCK = {
    "attention/self/query": "self_attention_layer/query",
    "attention/self/key": "self_attention_layer/key",
    "attention/self/value": "self_attention_layer/value",
    "attention/output/dense": "self_attention_layer/attention_output",
    "attention/output/LayerNorm": "self_attention_layer_norm",
    "intermediate/dense": "feedforward_intermediate_dense",
    "output/dense": "feedforward_output_dense",
    "output/LayerNorm": "feedforward_layer_norm",
}


def _preset_config(path):
    """The keras-hub config dict of a `BertBackbone` preset folder, or `None`."""
    config = os.path.join(path, "config.json")
    if not (os.path.isfile(config) and os.path.isfile(os.path.join(path, "model.weights.h5"))):
        return None
    try:
        with open(config, encoding="utf-8") as f:
            values = json.load(f)
    except ValueError:
        return None
    if isinstance(values, dict) and values.get("class_name") == "BertBackbone":
        return values.get("config", {})
    return None


def matches(path):
    return os.path.isdir(path) and _preset_config(path) is not None


def backbone_config(values):
    """A `BertConfig` from keras-hub's `BertBackbone` arguments."""
    return BertConfig(
        vocab_size=values["vocabulary_size"],
        hidden_size=values["hidden_dim"],
        num_layers=values["num_layers"],
        num_heads=values["num_heads"],
        intermediate_size=values["intermediate_dim"],
        hidden_act="gelu_approximate",
        dropout=values.get("dropout", 0.1),
        attention_dropout=values.get("dropout", 0.1),
        max_position_embeddings=values.get("max_sequence_length", 512),
        type_vocab_size=values.get("num_segments", 2),
    )


def load(path, config=None):
    """Load a keras-hub `BertBackbone` preset folder into a new `BertEncoder`.

    Args:
        path: the preset folder (`config.json` + `model.weights.h5`).
        config: a `BertConfig` to use instead of the one derived from the preset.

    Returns:
        `(encoder, config)`.
    """
    keras_hub = require("keras_hub", f"reading the KerasHub preset {path}")
    try:
        config = config or backbone_config(_preset_config(path))
        backbone = keras_hub.models.BertBackbone.from_preset(path)
    except Exception as e:  # h5py, JSON and deserialization errors of all kinds
        raise CheckpointError(f"{path}: cannot read this keras-hub preset "
                              f"({describe_error(e)})") from None
    reader = ArrayReader(path, {v.path: np.asarray(v) for v in backbone.weights})
    encoder = BertEncoder(config)
    assign_checked(
        encoder_variables(encoder), reader,
        lambda name: einsum_source(name, config, _TOP, _BLOCK, "transformer_layer_{index}/"),
        lambda key: True)
    return encoder, config
