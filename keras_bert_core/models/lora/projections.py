"""The encoder's projections that LoRA adapts, and the weights around them."""

import keras
import numpy as np

from keras_bert_core.keras_internals import sublayers
from keras_bert_core.models.encoder import BertEncoder

# Target name -> the projection of a `TransformerEncoderBlock` it adapts.
PROJECTIONS = {
    "query": lambda block: block.attention.query,
    "key": lambda block: block.attention.key,
    "value": lambda block: block.attention.value,
    "attention_output": lambda block: block.attention.output_dense,
    "intermediate": lambda block: block.intermediate,
    "output": lambda block: block.output_dense,
}
# Shorthands accepted in `targets`.
TARGET_GROUPS = {
    "attention": ("query", "key", "value", "attention_output"),
    "feed_forward": ("intermediate", "output"),
    "all": tuple(PROJECTIONS),
}
# Encoder weights that `also_train` can keep trainable.
ALSO_TRAIN = ("bias", "layer_norm", "pooler")


def encoder_of(model):
    """The `BertEncoder` that `model` is or holds (`TypeError` for any other model)."""
    if isinstance(model, BertEncoder):
        return model
    encoder = getattr(model, "encoder", None)
    if isinstance(encoder, BertEncoder):
        return encoder
    raise TypeError(f"LoRA needs a keras_bert_core task model or BertEncoder, got "
                    f"{type(model).__name__}")


def target_names(targets):
    """The `PROJECTIONS` names that `targets` (names and `TARGET_GROUPS`) stand for."""
    if isinstance(targets, str):
        targets = (targets,)
    names = []
    for target in targets:
        for name in TARGET_GROUPS.get(target, (target,)):
            if name not in PROJECTIONS:
                raise ValueError(f"unknown LoRA target {target!r}: choose from "
                                 f"{[*PROJECTIONS, *TARGET_GROUPS]}")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("targets is empty: name at least one projection, e.g. "
                         "('query', 'value')")
    return tuple(name for name in PROJECTIONS if name in names)


def projections(encoder, targets=tuple(PROJECTIONS)):
    """`(name, layer, target)` for each distinct projection: ALBERT's blocks shared across
    layers are `encoder.layer_groups`, each listed once."""
    for block in encoder.layer_groups:
        for target in targets:
            layer = PROJECTIONS[target](block)
            prefix = f"{block.name}/attention/" if target in TARGET_GROUPS["attention"] else (
                f"{block.name}/")
            yield prefix + layer.name, layer, target


def adapted_projections(encoder):
    """`projections`' entries that have an adapter."""
    return [(name, layer, target) for name, layer, target in projections(encoder)
            if layer.lora_enabled]


def base_kernel(layer):
    """The kernel variable `W` of a projection: its `kernel` property gives `W + alpha / rank
    * A B` once adapted (Keras keeps `W` as the layer's weight named `kernel`)."""
    return next(weight for weight in layer.weights if weight.name == "kernel")


def has_lora(model):
    """Whether `model` (any Keras model) has LoRA adapters from `enable_lora`.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> has_lora(encoder)
    False
    >>> _ = kbc.enable_lora(encoder, rank=2)
    >>> has_lora(encoder), has_lora(kbc.merge_lora(encoder))
    (True, False)
    """
    try:
        return bool(adapted_projections(encoder_of(model)))
    except TypeError:  # not a keras_bert_core model: no adapters of ours
        return False


def unique(variables):
    """`variables` without repeats (a shared ALBERT block lists its weights once per layer)."""
    seen, first = set(), []
    for variable in variables:
        if id(variable) not in seen:
            seen.add(id(variable))
            first.append(variable)
    return first


def parameter_count(variables):
    """The values in `variables`, each variable counted once."""
    return sum(int(np.prod(variable.shape)) for variable in unique(variables))


def also_trainable(encoder, also_train):
    """The encoder weights that `also_train` keeps trainable."""
    weights = []
    if "pooler" in also_train and encoder.pooler is not None:
        weights += encoder.pooler.weights
    for layer in sublayers(encoder):
        if "layer_norm" in also_train and isinstance(layer, keras.layers.LayerNormalization):
            weights += layer.weights
        if ("bias" in also_train and isinstance(layer, keras.layers.Dense)
                and layer is not encoder.pooler and layer.bias is not None):
            weights.append(layer.bias)
    return weights


def kept_trainable(encoder):
    """Which `ALSO_TRAIN` groups are trainable now (read back from the variables)."""
    return tuple(group for group in ALSO_TRAIN
                 if (weights := also_trainable(encoder, (group,)))
                 and all(weight.trainable for weight in weights))


def named(variables):
    """`{path: variable}`; the paths (`block_0/attention/query/lora_kernel_a`) are the same
    in every model built from the same config."""
    by_path = {}
    for variable in unique(variables):
        if variable.path in by_path:
            raise ValueError(f"two weights share the path {variable.path!r}")
        by_path[variable.path] = variable
    return by_path
