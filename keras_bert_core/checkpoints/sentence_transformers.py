"""sentence-transformers folders read: `modules.json` with a Transformer (a Hugging Face
folder), a Pooling, Dense and Normalize modules, as one `BertEmbedder`.

Weights are read from safetensors only (a Dense module's `pytorch_model.bin` is refused,
never unpickled).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

import numpy as np

from keras_bert_core.checkpoints import huggingface
from keras_bert_core.checkpoints.readers import SafetensorsReader
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models.embedder import SIMILARITIES, BertEmbedder

MODULES_FILE = "modules.json"
MODULE_CONFIG = "sentence_bert_config.json"
MODEL_CONFIG = "config_sentence_transformers.json"
WEIGHTS_FILE = "model.safetensors"
# sentence-transformers' pooling mode names -> ours (`SentencePooling`).
POOLING_NAMES = {"cls": "cls", "max": "max", "mean": "mean",
                 "mean_sqrt_len_tokens": "mean_sqrt_len", "lasttoken": "last_token"}
# Its legacy config flags, in the order it concatenates their vectors.
POOLING_FLAGS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_tokens": "mean",
                 "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean",
                 "pooling_mode_lasttoken": "lasttoken"}
# Dense activations: PyTorch module -> Keras name.
ACTIVATIONS = {"torch.nn.modules.activation.Tanh": "tanh",
               "torch.nn.modules.linear.Identity": "linear",
               "torch.nn.modules.activation.ReLU": "relu",
               "torch.nn.modules.activation.GELU": "gelu",
               "torch.nn.modules.activation.Sigmoid": "sigmoid"}
_KINDS = ("Transformer", "Pooling", "Dense", "Normalize")


@dataclasses.dataclass
class SentenceTransformersFolder:
    """What a sentence-transformers folder holds, in `BertEmbedder`'s terms.

    Attributes:
        transformer: the Transformer module's folder (a Hugging Face checkpoint with its
            tokenizer files).
        settings: `BertEmbedder` keyword arguments (pooling, dense_layers, normalize,
            prompts, default_prompt_name, similarity).
        dense_weights: per dense layer, `(kernel [in, out], bias or None)` float32 arrays.
        seq_length: `sentence_bert_config.json`'s `max_seq_length`, else the tokenizer's
            `model_max_length`, or None.
        lower_case: True where `do_lower_case` says so, else None (the tokenizer's own).
    """

    transformer: str
    settings: dict
    dense_weights: list
    seq_length: int | None
    lower_case: bool | None


def matches(path):
    """Whether `path` is a folder with a `modules.json`."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MODULES_FILE))


def _read_json(file, what, kind=dict):
    try:
        with open(file, encoding="utf-8") as f:
            values = json.load(f)
    except OSError as e:
        raise CheckpointError(f"{file}: cannot read {what} ({e.strerror})") from None
    except ValueError as e:
        raise CheckpointError(f"{file}: not valid JSON ({e}); expected {what}") from None
    if not isinstance(values, kind):
        raise CheckpointError(f"{file}: expected {what}, a JSON {kind.__name__}")
    return values


def _modules(path):
    """`[(kind, module folder, modules.json entry)]` in order, checked."""
    file = os.path.join(path, MODULES_FILE)
    entries = _read_json(file, "sentence-transformers' list of modules", list)
    modules = []
    for entry in sorted(entries, key=lambda e: e.get("idx", 0) if isinstance(e, dict) else 0):
        kind = entry.get("type", "") if isinstance(entry, dict) else ""
        name = kind.rsplit(".", 1)[-1]
        if not (isinstance(kind, str) and kind.startswith("sentence_transformers.")
                and name in _KINDS):
            raise CheckpointError(f"{file}: module type {kind!r} is not supported (keras_bert_"
                                  f"core reads {', '.join(_KINDS)})")
        modules.append((name, os.path.join(path, entry.get("path") or ""), entry))
    kinds = " ".join(kind for kind, _, _ in modules)
    if not re.fullmatch(r"Transformer Pooling( Dense)*( Normalize)?", kinds):
        raise CheckpointError(f"{file}: modules {kinds!r} are not supported: keras_bert_core "
                              "reads Transformer, Pooling, then any Dense, then Normalize")
    return modules


def _pooling(folder, hidden_size):
    file = os.path.join(folder, "config.json")
    config = _read_json(file, "a Pooling module's config")
    if config.get("include_prompt", True) is not True:
        raise CheckpointError(f"{file}: include_prompt {config['include_prompt']!r} is not "
                              "supported (prompts are pooled with the text)")
    width = config.get("embedding_dimension", config.get("word_embedding_dimension"))
    if width is not None and width != hidden_size:
        raise CheckpointError(f"{file}: embedding dimension {width} does not match the "
                              f"Transformer's hidden size {hidden_size}")
    modes = config.get("pooling_mode")
    if modes is None:
        modes = [mode for flag, mode in POOLING_FLAGS.items() if config.get(flag)] or ["mean"]
    modes = [modes] if isinstance(modes, str) else list(modes)
    for mode in modes:
        if mode not in POOLING_NAMES:
            raise CheckpointError(f"{file}: pooling mode {mode!r} is not supported (keras_"
                                  f"bert_core pools by {', '.join(POOLING_NAMES)})")
    modes = [POOLING_NAMES[mode] for mode in modes]
    return modes[0] if len(modes) == 1 else modes


def _dense(folder, width):
    """`(settings, (kernel, bias))` of a Dense module whose input is `width` wide."""
    file = os.path.join(folder, "config.json")
    config = _read_json(file, "a Dense module's config")
    activation = config.get("activation_function", "torch.nn.modules.activation.Tanh")
    if activation not in ACTIVATIONS:
        raise CheckpointError(f"{file}: activation_function {activation!r} is not supported "
                              f"(keras_bert_core reads {', '.join(ACTIVATIONS)})")
    for key, value in (("use_residual", False), ("module_input_name", "sentence_embedding"),
                       ("module_output_name", "sentence_embedding")):
        if config.get(key, value) not in (value, None):
            raise CheckpointError(f"{file}: {key} {config[key]!r} is not supported")
    if config.get("in_features") != width:
        raise CheckpointError(f"{file}: in_features {config.get('in_features')!r} does not "
                              f"match the {width} features before it")
    weights = os.path.join(folder, WEIGHTS_FILE)
    if not os.path.isfile(weights):
        raise CheckpointError(f"{folder}: no {WEIGHTS_FILE} (keras_bert_core reads Dense "
                              "weights from safetensors only; a pytorch_model.bin is never "
                              "unpickled)")
    reader = SafetensorsReader([weights])
    use_bias = bool(config.get("bias", True))
    units = config.get("out_features")
    expected = {"linear.weight": (units, width), **({"linear.bias": (units,)} if use_bias
                                                     else {})}
    for key, shape in expected.items():
        if reader.shapes.get(key) != shape:
            raise CheckpointError(f"{weights}: {key} has shape {reader.shapes.get(key)}, "
                                  f"expected {shape} (config.json: in_features {width}, "
                                  f"out_features {units})")
    kernel = reader.read("linear.weight").astype("float32").T
    bias = reader.read("linear.bias").astype("float32") if use_bias else None
    settings = {"units": units, "activation": ACTIVATIONS[activation], "use_bias": use_bias}
    return settings, (kernel, bias)


def _model_settings(path):
    """prompts, default_prompt_name and similarity from config_sentence_transformers.json."""
    file = os.path.join(path, MODEL_CONFIG)
    if not os.path.isfile(file):
        return {}
    config = _read_json(file, "sentence-transformers' model config")
    prompts = config.get("prompts") or {}
    if not (isinstance(prompts, dict) and all(isinstance(v, str) for v in prompts.values())):
        raise CheckpointError(f"{file}: prompts {prompts!r} is not a dict of strings")
    default = config.get("default_prompt_name")
    if default is not None and default not in prompts:
        raise CheckpointError(f"{file}: default_prompt_name {default!r} is not one of the "
                              f"prompts {sorted(prompts)}")
    similarity = config.get("similarity_fn_name") or "cosine"
    if similarity not in SIMILARITIES:
        raise CheckpointError(f"{file}: similarity_fn_name {similarity!r} is not supported "
                              f"({', '.join(SIMILARITIES)})")
    return {"prompts": prompts, "default_prompt_name": default, "similarity": similarity}


def read_folder(path):
    """The `SentenceTransformersFolder` at `path`; each unsupported module, mode or value
    raises one `CheckpointError` naming its file and the value."""
    path = os.fspath(path)
    modules = _modules(path)
    transformer = modules[0][1]
    hidden_size = huggingface.read_config(transformer).hidden_size
    settings = {"pooling": _pooling(modules[1][1], hidden_size), "dense_layers": [],
                "normalize": modules[-1][0] == "Normalize", **_model_settings(path)}
    width = hidden_size * (1 if isinstance(settings["pooling"], str)
                           else len(settings["pooling"]))
    dense_weights = []
    for kind, folder, _ in modules[2:]:
        if kind == "Dense":
            layer, weights = _dense(folder, width)
            settings["dense_layers"].append(layer)
            dense_weights.append(weights)
            width = layer["units"]
    module_config = os.path.join(transformer, MODULE_CONFIG)
    values = _read_json(module_config, "the Transformer module's config") if os.path.isfile(
        module_config) else {}
    length = values.get("max_seq_length")
    tokenizer_config = os.path.join(transformer, "tokenizer_config.json")
    if length is None and os.path.isfile(tokenizer_config):
        # sentence-transformers 5 and later keep it as the tokenizer's model_max_length.
        length = _read_json(tokenizer_config, "a tokenizer_config.json").get("model_max_length")
    return SentenceTransformersFolder(
        transformer=transformer, settings=settings, dense_weights=dense_weights,
        seq_length=length if isinstance(length, int) and 0 < length < 1_000_000 else None,
        lower_case=True if values.get("do_lower_case") else None)


def load_encoder(path, config=None):
    """The Transformer module's encoder: `(encoder, config)` (as `load_checkpoint` gives)."""
    return huggingface.load(_modules(os.fspath(path))[0][1], config)


def load(path, config=None):
    """The `BertEmbedder` of the sentence-transformers folder at `path` (no preprocessor),
    and its `SentenceTransformersFolder`.

    Args:
        path: the folder (with `modules.json`).
        config: a `BertConfig` to use instead of the Transformer's `config.json`.
    """
    folder = read_folder(path)
    encoder, _ = huggingface.load(folder.transformer, config)
    embedder = BertEmbedder(encoder, **folder.settings)
    for dense, (kernel, bias) in zip(embedder.denses, folder.dense_weights, strict=True):
        dense.kernel.assign(np.asarray(kernel))
        if bias is not None:
            dense.bias.assign(np.asarray(bias))
    return embedder, folder
