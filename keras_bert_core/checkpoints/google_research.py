"""google-research TF1 checkpoints of BERT (`bert_model.ckpt.*` + `bert_config.json`) and
ALBERT (`model.ckpt-*` + `albert_config.json`, google-research/albert).

Variables are read by name with `tf.train.load_checkpoint` (no TF1 graph is built). Their
kernels are already `[in, out]`; only the NSP (SOP) `output_weights` is stored transposed.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from keras_bert_core.checkpoints.readers import open_tf_checkpoint
from keras_bert_core.checkpoints.weights import (
    Source,
    assign_checked,
    encoder_variables,
    read_head_groups,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models import BertEncoder

CONFIG_NAMES = ("bert_config.json", "albert_config.json", "config.json")
# google-research/albert's scopes of BERT's layer names (canonical prefix -> its prefix):
# one transformer per layer group, its attention and feed-forward in `attention_1`/`ffn_1`.
_ALBERT_GROUP = r"encoder/transformer/group_\1/inner_group_0/"
_ALBERT_NAMES = [
    (r"^embeddings/projection/", "encoder/embedding_hidden_mapping_in/"),
    (r"^encoder/layer_(\d+)/attention/self/", _ALBERT_GROUP + "attention_1/self/"),
    (r"^encoder/layer_(\d+)/attention/output/dense/", _ALBERT_GROUP + "attention_1/output/dense/"),
    (r"^encoder/layer_(\d+)/attention/output/LayerNorm/", _ALBERT_GROUP + "LayerNorm/"),
    (r"^encoder/layer_(\d+)/intermediate/dense/", _ALBERT_GROUP + "ffn_1/intermediate/dense/"),
    (r"^encoder/layer_(\d+)/output/dense/", _ALBERT_GROUP + "ffn_1/intermediate/output/dense/"),
    (r"^encoder/layer_(\d+)/output/LayerNorm/", _ALBERT_GROUP + "LayerNorm_1/"),
]
_OPTIMIZER_SLOTS = ("/adam_m", "/adam_v")
_HEADS = {
    "mlm/transform/kernel": Source("cls/predictions/transform/dense/kernel"),
    "mlm/transform/bias": Source("cls/predictions/transform/dense/bias"),
    "mlm/layer_norm/gamma": Source("cls/predictions/transform/LayerNorm/gamma"),
    "mlm/layer_norm/beta": Source("cls/predictions/transform/LayerNorm/beta"),
    "mlm/output_bias": Source("cls/predictions/output_bias"),
    "nsp/kernel": Source("cls/seq_relationship/output_weights", transpose=True),
    "nsp/bias": Source("cls/seq_relationship/output_bias"),
}


def matches(reader):
    """Whether a TensorFlow checkpoint names its variables the google-research way."""
    return any(key.startswith("bert/embeddings/") for key in reader.shapes)


def _is_albert(reader):
    return any(key.startswith("bert/encoder/transformer/group_") for key in reader.shapes)


def config_beside(prefix, albert=False):
    """The `BertConfig` from `bert_config.json` (or `albert_config.json`, `config.json`)
    beside a checkpoint; with `albert`, read as google-research/albert's configuration."""
    folder = os.path.dirname(prefix)
    for name in CONFIG_NAMES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            if not albert:
                return BertConfig.from_json(path)
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
            # google-research/albert's `gelu` is the tanh approximation.
            act = values.get("hidden_act", "gelu")
            return BertConfig.from_dict({**values, "model_type": "albert", "hidden_act":
                                         "gelu_approximate" if act == "gelu" else act})
    return None


def _albert_name(name):
    for pattern, replacement in _ALBERT_NAMES:
        renamed, count = re.subn(pattern, replacement, name)
        if count:
            return renamed
    return name


def load(path, config=None):
    """Load a google-research checkpoint into a new `BertEncoder`.

    Args:
        path: the checkpoint prefix (e.g. `.../bert_model.ckpt`), its `.index` file or folder.
        config: a `BertConfig` to use instead of the `bert_config.json` beside it.

    Returns:
        `(encoder, config)`.
    """
    reader = open_tf_checkpoint(path)
    albert = _is_albert(reader)
    config = config or config_beside(reader.path, albert)
    if config is None:
        raise CheckpointError(
            f"{reader.path}: no {' or '.join(CONFIG_NAMES)} beside the checkpoint (TF1 "
            "checkpoints do not record the number of attention heads); add one or pass config=")
    encoder = BertEncoder(config)
    rename = _albert_name if albert else (lambda name: name)
    assign_checked(
        encoder_variables(encoder), reader, lambda name: Source("bert/" + rename(name)),
        lambda key: key.startswith("bert/") and not key.endswith(_OPTIMIZER_SLOTS))
    return encoder, config


def read_heads(path):
    """The MLM and NSP (ALBERT: SOP) head weights of a pretraining checkpoint, or `None`."""
    return read_head_groups(open_tf_checkpoint(path), _HEADS)


def save_google_research_checkpoint(encoder, directory, heads=None):
    """Write an encoder (and optionally its pretraining heads) as google-research/bert does.

    Produces `directory/bert_model.ckpt.{index,data-00000-of-00001}` and
    `directory/bert_config.json`, readable by `load_checkpoint` and by TF1 BERT code.

    Args:
        encoder: a `BertEncoder`.
        directory: output folder, created if needed.
        heads: optional dict of head weights under the names `read_pretraining_head_weights`
            returns (all of a head's weights, or none of them).

    Returns:
        The checkpoint prefix.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.checkpoints import load_checkpoint
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> prefix = save_google_research_checkpoint(encoder, tempfile.mkdtemp())
    >>> loaded, config = load_checkpoint(prefix)
    >>> config == encoder.config
    True
    """
    import tensorflow as tf

    heads = dict(heads or {})
    unknown = sorted(set(heads) - set(_HEADS))
    if unknown:
        raise ValueError(f"unknown head weight names {unknown}; expected names from "
                         f"{sorted(_HEADS)}")
    tensors = {"bert/" + name: np.asarray(variable)
               for name, variable in encoder_variables(encoder).items()}
    for name, value in heads.items():
        source = _HEADS[name]
        value = np.asarray(value, np.float32)
        tensors[source.key] = value.T if source.transpose else value
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, "bert_model.ckpt")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors),
                      shape_and_slices=[""] * len(tensors),
                      tensors=[tf.constant(value) for value in tensors.values()])
    encoder.config.to_json(os.path.join(directory, "bert_config.json"))
    return prefix
