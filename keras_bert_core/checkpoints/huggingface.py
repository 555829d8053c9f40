"""Hugging Face checkpoints of BERT, RoBERTa, XLM-RoBERTa, ALBERT, DistilBERT, ModernBERT,
DeBERTa-v2/v3 and ELECTRA: `config.json` + `model.safetensors` (or its shards).

Base-model keys (`encoder.layer.0...`) and those of the pretraining, masked-LM and
sequence-classification models (`bert.encoder...`, `cls.predictions...`, `roberta.`,
`lm_head.`, `albert.`, `predictions.`, `distilbert.`, `vocab_transform.`, `electra.`,
`generator_predictions.`, `discriminator_predictions.`...) load. PyTorch
pickles (`pytorch_model.bin`) are refused, never opened.
"""

from __future__ import annotations

import json
import os
import re
import warnings

from keras_bert_core.checkpoints import huggingface_deberta as deberta
from keras_bert_core.checkpoints import huggingface_electra as electra
from keras_bert_core.checkpoints import huggingface_modernbert as modernbert
from keras_bert_core.checkpoints.readers import RenamedReader, SafetensorsReader
from keras_bert_core.checkpoints.weights import (
    Source,
    assign_checked,
    encoder_variables,
    read_head_groups,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError, VocabularyMismatchError
from keras_bert_core.models import BertEncoder

_SAFETENSORS = ("model.safetensors", "model.safetensors.index.json")
_PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
_PARAMS = {"kernel": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}
# Each family's spelling of BERT's layer names (canonical name prefix -> its key prefix; the
# first that matches wins), the model prefix of its head-carrying checkpoints, the scopes of
# its encoder weights and its pretraining heads' layers.
_ALBERT_LAYER = r"encoder.albert_layer_groups.\1.albert_layers.0."
_FAMILIES = {
    "bert": {"prefix": "bert.", "scopes": ("embeddings.", "encoder.", "pooler."),
             "renames": [], "mlm": ("cls.predictions.transform.dense",
                                    "cls.predictions.transform.LayerNorm", "cls.predictions.bias"),
             "nsp": "cls.seq_relationship"},
    "roberta": {"prefix": "roberta.", "scopes": ("embeddings.", "encoder.", "pooler."),
                "renames": [], "mlm": ("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
                "nsp": None},
    "albert": {"prefix": "albert.", "scopes": ("embeddings.", "encoder.", "pooler."),
               "renames": [
                   (r"^embeddings/projection/", "encoder.embedding_hidden_mapping_in."),
                   (r"^encoder/layer_(\d+)/attention/self/", _ALBERT_LAYER + "attention."),
                   (r"^encoder/layer_(\d+)/attention/output/dense/",
                    _ALBERT_LAYER + "attention.dense."),
                   (r"^encoder/layer_(\d+)/attention/output/LayerNorm/",
                    _ALBERT_LAYER + "attention.LayerNorm."),
                   (r"^encoder/layer_(\d+)/intermediate/dense/", _ALBERT_LAYER + "ffn."),
                   (r"^encoder/layer_(\d+)/output/dense/", _ALBERT_LAYER + "ffn_output."),
                   (r"^encoder/layer_(\d+)/output/LayerNorm/",
                    _ALBERT_LAYER + "full_layer_layer_norm."),
                   (r"^pooler/dense/", "pooler.")],
               "mlm": ("predictions.dense", "predictions.LayerNorm", "predictions.bias"),
               "nsp": "sop_classifier.classifier"},
    "distilbert": {"prefix": "distilbert.", "scopes": ("embeddings.", "transformer."),
                   "renames": [
                       (r"^encoder/layer_(\d+)/attention/self/query/",
                        r"transformer.layer.\1.attention.q_lin."),
                       (r"^encoder/layer_(\d+)/attention/self/key/",
                        r"transformer.layer.\1.attention.k_lin."),
                       (r"^encoder/layer_(\d+)/attention/self/value/",
                        r"transformer.layer.\1.attention.v_lin."),
                       (r"^encoder/layer_(\d+)/attention/output/dense/",
                        r"transformer.layer.\1.attention.out_lin."),
                       (r"^encoder/layer_(\d+)/attention/output/LayerNorm/",
                        r"transformer.layer.\1.sa_layer_norm."),
                       (r"^encoder/layer_(\d+)/intermediate/dense/",
                        r"transformer.layer.\1.ffn.lin1."),
                       (r"^encoder/layer_(\d+)/output/dense/", r"transformer.layer.\1.ffn.lin2."),
                       (r"^encoder/layer_(\d+)/output/LayerNorm/",
                        r"transformer.layer.\1.output_layer_norm.")],
                   "mlm": ("vocab_transform", "vocab_layer_norm", "vocab_projector.bias"),
                   "nsp": None},
    "electra": electra.FAMILY,
}


# XLM-RoBERTa's checkpoints spell every weight as RoBERTa's do.
_FAMILIES["xlm-roberta"] = _FAMILIES["roberta"]


def _head_sources(family, keys):
    if family == "modernbert":
        return modernbert.HEAD_SOURCES
    if family == "deberta":
        return deberta.head_sources(keys)
    names = _FAMILIES[family]
    dense, norm, bias = names["mlm"]
    sources = {
        "mlm/transform/kernel": Source(f"{dense}.weight", transpose=True),
        "mlm/transform/bias": Source(f"{dense}.bias"),
        "mlm/layer_norm/gamma": Source(f"{norm}.weight"),
        "mlm/layer_norm/beta": Source(f"{norm}.bias"),
        "mlm/output_bias": Source(bias),
    }
    if family == "electra":
        sources.update(electra.RTD_SOURCES)
    if names["nsp"]:
        sources["nsp/kernel"] = Source(f"{names['nsp']}.weight", transpose=True)
        sources["nsp/bias"] = Source(f"{names['nsp']}.bias")
    return sources


def matches(path):
    """Whether `path` is a `.safetensors` file or a folder with `config.json` and weights."""
    if os.path.isfile(path):
        return path.endswith(".safetensors")
    return os.path.isfile(os.path.join(path, "config.json")) and any(
        os.path.isfile(os.path.join(path, name)) for name in _SAFETENSORS + _PICKLES)


def hf_key(name, prefix="", family="bert"):
    """A canonical weight name in Hugging Face's spelling for a model `family`.

    Example:
    >>> hf_key("encoder/layer_0/attention/self/query/kernel", "bert.")
    'bert.encoder.layer.0.attention.self.query.weight'
    >>> hf_key("encoder/layer_0/intermediate/dense/kernel", "albert.", "albert")
    'albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight'
    """
    if name.startswith("embeddings/") and name.endswith("_embeddings"):
        return f"{prefix}{name.replace('/', '.')}.weight"
    path, param = name.rsplit("/", 1)
    for pattern, replacement in _FAMILIES[family]["renames"]:
        renamed, count = re.subn(pattern, replacement, path + "/")
        if count:
            return f"{prefix}{renamed.replace('/', '.')}{_PARAMS[param]}"
    path = re.sub(r"layer_(\d+)", r"layer.\1", path).replace("/", ".")
    return f"{prefix}{path}.{_PARAMS[param]}"


def _source(name, prefix, family):
    # PyTorch Linear weights are [out, in]; Keras kernels are [in, out].
    return Source(hf_key(name, prefix, family), transpose=name.endswith("/kernel"))


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
    if model_type not in (*_FAMILIES, "modernbert", "deberta-v2"):
        raise CheckpointError(f"{path}: model_type {model_type!r} is not one of BERT's family "
                              f"({', '.join(_FAMILIES)}, modernbert, deberta-v2)")
    if model_type == "deberta-v2" and deberta.unsupported(values):
        raise CheckpointError(f"{path}: this DeBERTa-v2 configuration is not supported: "
                              f"{deberta.unsupported(values)} (as DeBERTa-v3's)")
    if model_type == "modernbert":
        biases = {key: bool(values.get(key, False))
                  for key in ("mlp_bias", "attention_bias", "norm_bias")}
        if len(set(biases.values())) > 1:
            raise CheckpointError(f"{path}: {biases} mixes biased and bias-free layers; "
                                  "keras_bert_core's ModernBERT has biases everywhere or nowhere")
    if model_type == "albert" and values.get("inner_group_num", 1) != 1:
        raise CheckpointError(f"{path}: inner_group_num {values['inner_group_num']} is not "
                              "supported (ALBERT's published models use 1)")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(f"{path}: position_embedding_type {position_type!r} is not "
                              "supported (only 'absolute')")
    return BertConfig.from_json(path)


def read_config(path):
    """The `BertConfig` of the Hugging Face checkpoint at `path` (its folder or weights)."""
    config_file, _ = _locate(os.fspath(path))
    return _read_config(config_file)


def _open(path):
    """(config.json path, reader) with legacy key spellings mapped to today's."""
    config_file, files = _locate(os.fspath(path))
    reader = SafetensorsReader(files, path=os.fspath(path))
    names = {}
    for key in reader.shapes:
        # Checkpoints converted from TF1 still say LayerNorm.gamma / .beta.
        new = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        names[re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", new)] = key
    for bias in ("cls.predictions.bias", "lm_head.bias", "predictions.bias"):
        decoder_bias = bias.replace(".bias", ".decoder.bias")
        if bias not in names and decoder_bias in names:
            names[bias] = names.pop(decoder_bias)
    return config_file, modernbert.SplitQKVReader(RenamedReader(reader, names))


def _prefix(reader, family):
    own = {"modernbert": modernbert.PREFIX, "deberta": deberta.PREFIX}
    prefix = own[family] if family in own else _FAMILIES[family]["prefix"]
    return prefix if any(key.startswith(prefix) for key in reader.shapes) else ""


def load(path, config=None):
    """Load a Hugging Face BERT, RoBERTa, XLM-RoBERTa, ALBERT, DistilBERT, ModernBERT,
    DeBERTa-v2/v3 or ELECTRA (a discriminator's or a generator's encoder) checkpoint into a
    new `BertEncoder` (the family comes from `config.json`'s `model_type`).

    Args:
        path: the checkpoint folder, or its `.safetensors` file (with `config.json` beside).
        config: a `BertConfig` to use instead of `config.json`.

    Returns:
        `(encoder, config)`.
    """
    config_file, reader = _open(path)
    config = config or _read_config(config_file)
    encoder = BertEncoder(config)
    family = config.family
    prefix = _prefix(reader, family)
    variables = encoder_variables(encoder)
    if config.pooler and not any(key.startswith(prefix + "pooler.") for key in reader.shapes):
        # Sentence-embedding models often drop the pooler; transformers warns the same way.
        warnings.warn(f"{path}: no pooler weights; pooled_output comes from freshly "
                      "initialized weights", stacklevel=3)
        variables = {name: v for name, v in variables.items() if not name.startswith("pooler/")}
    if family == "modernbert":
        scopes = tuple(prefix + scope for scope in modernbert.SCOPES)
        source = lambda name: modernbert.modernbert_source(name, prefix)  # noqa: E731
    elif family == "deberta":
        scopes = tuple(prefix + scope for scope in deberta.SCOPES)
        source = lambda name: deberta.deberta_source(name, prefix)  # noqa: E731
    else:
        scopes = tuple(prefix + scope for scope in _FAMILIES[family]["scopes"])
        source = lambda name: _source(name, prefix, family)  # noqa: E731
    buffers = tuple(f"{prefix}embeddings.{name}" for name in ("position_ids", "token_type_ids"))
    assign_checked(variables, reader, source,
                   lambda key: key.startswith(scopes) and key not in buffers)
    return encoder, config


def read_heads(path):
    """The masked-LM and sentence (BERT's next-sentence, ALBERT's sentence-order) head
    weights of a pretraining or masked-LM checkpoint (ELECTRA: the generator's masked-LM
    head, the discriminator's replaced-token head), or `None`."""
    config_file, reader = _open(path)
    return read_head_groups(reader, _head_sources(_read_config(config_file).family,
                                                  reader.shapes))


# Hugging Face config.json keys naming the ids a model's special tokens were trained at, and
# the packer's token each names.
_SPECIAL_TOKEN_IDS = {"pad_token_id": "pad", "bos_token_id": "cls", "eos_token_id": "sep"}


def check_special_token_ids(path, packer, vocabulary="the vocabulary"):
    """Raises `VocabularyMismatchError` where the Hugging Face checkpoint at `path` (its
    folder or a file in it; anything without a Hugging Face config.json is not checked)
    trained a special token at another id than `packer` (a `BertPacker`) puts it: a
    vocabulary of the right size in another order would give every sequence wrong
    [CLS]/[SEP]/[PAD] rows."""
    config = os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                          "config.json")
    try:
        with open(config, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError):
        return
    if not isinstance(values, dict) or "model_type" not in values:
        return  # not a Hugging Face config
    for key, token in _SPECIAL_TOKEN_IDS.items():
        trained, packed = values.get(key), getattr(packer, f"{token}_id")
        if isinstance(trained, int) and not isinstance(trained, bool) and trained != packed:
            raise VocabularyMismatchError(
                f"vocabulary and model do not match: {config} says {key} {trained}, but "
                f"{vocabulary} has the {token} token at id {packed}: use the vocabulary the "
                "model was trained with")

