"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors` (or its shards).

Both `BertModel` keys (`encoder.layer.0...`) and `BertForPreTraining` keys (`bert.encoder...`,
`cls.predictions...`) load. PyTorch pickles (`pytorch_model.bin`) are refused, never opened.
"""

from __future__ import annotations

import json
import os
import re
import warnings

from keras_bert_core.checkpoints.readers import RenamedReader, SafetensorsReader
from keras_bert_core.checkpoints.weights import (
    Source,
    assign_checked,
    encoder_variables,
    read_head_groups,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models import BertEncoder

_SAFETENSORS = ("model.safetensors", "model.safetensors.index.json")
_PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
_PARAMS = {"kernel": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}
_ENCODER_SCOPES = ("embeddings.", "encoder.", "pooler.")
_HEADS = {
    "mlm/transform/kernel": Source("cls.predictions.transform.dense.weight", transpose=True),
    "mlm/transform/bias": Source("cls.predictions.transform.dense.bias"),
    "mlm/layer_norm/gamma": Source("cls.predictions.transform.LayerNorm.weight"),
    "mlm/layer_norm/beta": Source("cls.predictions.transform.LayerNorm.bias"),
    "mlm/output_bias": Source("cls.predictions.bias"),
    "nsp/kernel": Source("cls.seq_relationship.weight", transpose=True),
    "nsp/bias": Source("cls.seq_relationship.bias"),
}


def matches(path):
    """Whether `path` is a `.safetensors` file or a folder with `config.json` and weights."""
    if os.path.isfile(path):
        return path.endswith(".safetensors")
    return os.path.isfile(os.path.join(path, "config.json")) and any(
        os.path.isfile(os.path.join(path, name)) for name in _SAFETENSORS + _PICKLES)


def hf_key(name, prefix=""):
    """A canonical weight name in Hugging Face's spelling.

    Example:
    >>> hf_key("encoder/layer_0/attention/self/query/kernel", "bert.")
    'bert.encoder.layer.0.attention.self.query.weight'
    """
    if name.startswith("embeddings/") and name.endswith("_embeddings"):
        return f"{prefix}{name.replace('/', '.')}.weight"
    path, param = name.rsplit("/", 1)
    path = re.sub(r"layer_(\d+)", r"layer.\1", path).replace("/", ".")
    return f"{prefix}{path}.{_PARAMS[param]}"


def _source(name, prefix):
    # PyTorch Linear weights are [out, in]; Keras kernels are [in, out].
    return Source(hf_key(name, prefix), transpose=name.endswith("/kernel"))


def _locate(path):
    """(config.json, the safetensors files) of the checkpoint at `path`."""
    if os.path.isfile(path):
        folder, files = os.path.dirname(path), [path]
    else:
        folder = path
        single, index = (os.path.join(folder, name) for name in _SAFETENSORS)
        if os.path.isfile(single):
            files = [single]
        elif os.path.isfile(index):
            try:
                with open(index, encoding="utf-8") as f:
                    shards = sorted(set(json.load(f)["weight_map"].values()))
            except (ValueError, KeyError, AttributeError) as e:
                raise CheckpointError(f"{index}: not a safetensors index ({e!r})") from None
            files = [os.path.join(folder, shard) for shard in shards]
        else:
            raise CheckpointError(
                f"{folder}: holds only PyTorch pickles ({', '.join(_PICKLES)}), which "
                "keras_bert_core never unpickles. Convert them to safetensors first, e.g. "
                "transformers.BertModel.from_pretrained(folder).save_pretrained(out)")
    config = os.path.join(folder, "config.json")
    if not os.path.isfile(config):
        raise CheckpointError(f"{folder}: no config.json beside the safetensors weights")
    return config, files


def _read_config(path):
    with open(path, encoding="utf-8") as f:
        try:
            values = json.load(f)
        except ValueError as e:
            raise CheckpointError(f"{path}: not valid JSON ({e})") from None
    model_type = values.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{path}: model_type {model_type!r} is not BERT")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(f"{path}: position_embedding_type {position_type!r} is not "
                              "supported (only 'absolute')")
    return BertConfig.from_json(path)


def _open(path):
    """(config.json path, reader) with legacy key spellings mapped to today's."""
    config_file, files = _locate(os.fspath(path))
    reader = SafetensorsReader(files, path=os.fspath(path))
    names = {}
    for key in reader.shapes:
        # Checkpoints converted from TF1 still say LayerNorm.gamma / .beta.
        new = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        names[re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", new)] = key
    if "cls.predictions.bias" not in names and "cls.predictions.decoder.bias" in names:
        names["cls.predictions.bias"] = names.pop("cls.predictions.decoder.bias")
    return config_file, RenamedReader(reader, names)


def load(path, config=None):
    """Load a Hugging Face BERT checkpoint into a new `BertEncoder`.

    Args:
        path: the checkpoint folder, or its `.safetensors` file (with `config.json` beside).
        config: a `BertConfig` to use instead of `config.json`.

    Returns:
        `(encoder, config)`.
    """
    config_file, reader = _open(path)
    config = config or _read_config(config_file)
    encoder = BertEncoder(config)
    prefix = "bert." if any(key.startswith("bert.") for key in reader.shapes) else ""
    variables = encoder_variables(encoder)
    if not any(key.startswith(prefix + "pooler.") for key in reader.shapes):
        # Sentence-embedding models often drop the pooler; transformers warns the same way.
        warnings.warn(f"{path}: no pooler weights; pooled_output comes from freshly "
                      "initialized weights", stacklevel=3)
        variables = {name: v for name, v in variables.items() if not name.startswith("pooler/")}
    scopes = tuple(prefix + scope for scope in _ENCODER_SCOPES)
    assign_checked(
        variables, reader, lambda name: _source(name, prefix),
        lambda key: key.startswith(scopes) and key != f"{prefix}embeddings.position_ids")
    return encoder, config


def read_heads(path):
    """The MLM and NSP head weights of a `BertForPreTraining` checkpoint, or `None`."""
    return read_head_groups(_open(path)[1], _HEADS)
