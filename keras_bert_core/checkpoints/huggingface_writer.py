"""Hugging Face checkpoints written: an encoder as `config.json` + `model.safetensors`, the
base model (`BertModel`, `RobertaModel`, `XLMRobertaModel`, `AlbertModel`, `DistilBertModel`)
that `transformers.AutoModel` loads and `huggingface.load` reads back."""

from __future__ import annotations

import json
import os

import numpy as np

from keras_bert_core.checkpoints.huggingface import hf_key
from keras_bert_core.checkpoints.weights import encoder_variables
from keras_bert_core.errors import CheckpointError
from keras_bert_core.families import ROBERTA_ARCHITECTURE

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
_ARCHITECTURES = {"bert": "BertModel", "roberta": "RobertaModel", "albert": "AlbertModel",
                  "distilbert": "DistilBertModel", "xlm-roberta": "XLMRobertaModel"}
_HF_ACTIVATIONS = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu",
                   "tanh": "tanh"}


def huggingface_config(config, packer=None):
    """The Hugging Face `config.json` values of a `BertConfig` (its family's key names);
    with a `BertPacker`, the special token ids it packs (`pad_token_id`, and RoBERTa's
    `bos_token_id`/`eos_token_id`).

    Raises:
        CheckpointError: the configuration has no Hugging Face counterpart (pre-LN blocks,
            sinusoidal positions, a RoBERTa position offset that is not its pad id + 1).

    Example:
    >>> import keras_bert_core as kbc
    >>> values = huggingface_config(kbc.BertConfig.preset("distilbert_base"))
    >>> values["model_type"], values["n_layers"], values["dim"]
    ('distilbert', 6, 768)
    """
    if config.norm_first or config.position_embedding != "learned":
        raise CheckpointError(f"a {config.family} encoder with norm_first={config.norm_first} "
                              f"and position_embedding={config.position_embedding!r} has no "
                              "Hugging Face counterpart (post-LN blocks, learned positions)")
    activation = _HF_ACTIVATIONS[config.hidden_act]
    common = {"architectures": [_ARCHITECTURES[config.family]], "model_type": config.family,
              "vocab_size": config.vocab_size,
              "max_position_embeddings": config.max_position_embeddings,
              "initializer_range": config.initializer_range}
    if packer is not None:
        common["pad_token_id"] = int(packer.pad_id)
    if config.family == "distilbert":
        return {**common, "dim": config.hidden_size, "n_layers": config.num_layers,
                "n_heads": config.num_heads, "hidden_dim": config.intermediate_size,
                "activation": activation, "dropout": config.dropout,
                "attention_dropout": config.attention_dropout, "sinusoidal_pos_embds": False}
    values = {**common, "hidden_size": config.hidden_size,
              "num_hidden_layers": config.num_layers,
              "num_attention_heads": config.num_heads,
              "intermediate_size": config.intermediate_size, "hidden_act": activation,
              "hidden_dropout_prob": config.dropout,
              "attention_probs_dropout_prob": config.attention_dropout,
              "type_vocab_size": config.type_vocab_size, "layer_norm_eps": config.layer_norm_eps,
              "position_embedding_type": "absolute"}
    if config.family in ROBERTA_ARCHITECTURE:
        pad = values.get("pad_token_id", config.position_offset - 1)
        if pad != config.position_offset - 1:
            raise CheckpointError(f"a RoBERTa encoder counts positions from "
                                  f"{config.position_offset}, but its pad id is {pad}: "
                                  "Hugging Face counts "
                                  "from the pad id + 1")
        values["pad_token_id"] = pad
        if packer is not None:
            values.update(bos_token_id=int(packer.cls_id), eos_token_id=int(packer.sep_id))
    elif config.position_offset:
        raise CheckpointError(f"a {config.family} encoder with position_offset "
                              f"{config.position_offset} has no Hugging Face counterpart")
    if config.family == "albert":
        values.update(embedding_size=config.embedding_size or config.hidden_size,
                      num_hidden_groups=config.num_layer_groups or config.num_layers,
                      inner_group_num=1)
    return values


def huggingface_weights(encoder):
    """The encoder's weights under its family's Hugging Face base-model keys, as
    contiguous float32 numpy arrays (PyTorch layout: `Linear` weights `[out, in]`)."""
    family = encoder.config.family
    weights = {}
    for name, variable in encoder_variables(encoder).items():
        value = np.asarray(variable.numpy(), "float32")
        weights[hf_key(name, "", family)] = np.ascontiguousarray(
            value.T if name.endswith("/kernel") else value)
    return weights


def save_huggingface_checkpoint(encoder, folder, packer=None):
    """Writes `encoder` into `folder` (which must exist) as `config.json` and
    `model.safetensors`, a Hugging Face base model of its family.

    Args:
        encoder: a `BertEncoder` (any family of `BertConfig`).
        folder: an existing folder.
        packer: None, or the `BertPacker` whose special token ids go into `config.json`.

    Returns:
        the list of files written.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.checkpoints import huggingface
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_huggingface_checkpoint(encoder, folder)
    >>> loaded, config = huggingface.load(folder)
    >>> config.hidden_size, loaded.count_params() == encoder.count_params()
    (128, True)
    """
    from safetensors.numpy import save_file

    config_file = os.path.join(folder, CONFIG_FILE)
    with open(config_file, "w", encoding="utf-8") as f:
        json.dump(huggingface_config(encoder.config, packer), f, indent=2, sort_keys=True)
        f.write("\n")
    weights_file = os.path.join(folder, WEIGHTS_FILE)
    save_file(huggingface_weights(encoder), weights_file, metadata={"format": "pt"})
    return [config_file, weights_file]
