"""What every checkpoint format shares: our encoder's weights under BERT's original names,
readers that say which file failed, and one checked assignment that reports every mismatch.

Canonical names are google-research's without the `bert/` scope
(`encoder/layer_0/attention/self/query/kernel`), in Keras layout (`[in, out]` kernels);
each format only says where a canonical weight lives in its files (a `Source`).
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable

import numpy as np

from keras_bert_core.errors import CheckpointMismatchError


@dataclasses.dataclass(frozen=True)
class Source:
    """Where one weight lives in a checkpoint and how its layout differs from Keras'.

    Args:
        key: the weight's name in the checkpoint.
        transpose: stored transposed (PyTorch `Linear` weights are `[out, in]`).
        shape: the stored shape where it differs by more than a transpose (e.g. an
            `EinsumDense` kernel `[hidden, heads, head_size]`); reshaped on load.
    """

    key: str
    transpose: bool = False
    shape: tuple[int, ...] | None = None

    def stored_shape(self, keras_shape):
        if self.shape is not None:
            return tuple(self.shape)
        return tuple(reversed(keras_shape)) if self.transpose else tuple(keras_shape)

    def to_keras(self, array, keras_shape):
        return np.reshape(array.T if self.transpose else array, keras_shape)


# Sub-layers of one transformer block: BERT's original name -> attribute path on our block.
_BLOCK_DENSES = {
    "attention/self/query": "attention.query",
    "attention/self/key": "attention.key",
    "attention/self/value": "attention.value",
    "attention/output/dense": "attention.output_dense",
    "intermediate/dense": "intermediate",
    "output/dense": "output_dense",
}
_BLOCK_NORMS = {"attention/output/LayerNorm": "attention_norm", "output/LayerNorm": "output_norm"}


def _dense(name, layer):
    # (ModernBERT's layers have no biases.)
    weights = {f"{name}/kernel": layer.kernel, f"{name}/bias": layer.bias}
    return {key: value for key, value in weights.items() if value is not None}


def _norm(name, layer):
    weights = {f"{name}/gamma": layer.gamma, f"{name}/beta": layer.beta}
    return {key: value for key, value in weights.items() if value is not None}


def encoder_variables(encoder):
    """The variables of a `BertEncoder` under canonical names, in a stable order.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> tuple(encoder_variables(encoder)["encoder/layer_1/attention/self/query/kernel"].shape)
    (128, 128)
    """
    embeddings = encoder.embeddings
    weights = {"embeddings/word_embeddings": embeddings.word_embeddings}
    if embeddings.token_type_embeddings is not None:
        weights["embeddings/token_type_embeddings"] = embeddings.token_type_embeddings
    if embeddings.position_embeddings is not None:
        weights["embeddings/position_embeddings"] = embeddings.position_embeddings
    weights.update(_norm("embeddings/LayerNorm", embeddings.layer_norm))
    if embeddings.projection is not None:
        weights.update(_dense("embeddings/projection", embeddings.projection))
    # With ALBERT's shared layers, `layer_{index}` is the index-th group of weights.
    for index, block in enumerate(encoder.layer_groups):
        prefix = f"encoder/layer_{index}/"
        for name, attribute in _BLOCK_DENSES.items():
            weights.update(_dense(prefix + name, operator.attrgetter(attribute)(block)))
        for name, attribute in _BLOCK_NORMS.items():
            if getattr(block, attribute) is not None:  # ModernBERT's first attention norm
                weights.update(_norm(prefix + name, getattr(block, attribute)))
    if encoder.relative_embeddings is not None:  # DeBERTa's
        weights["encoder/rel_embeddings"] = encoder.relative_embeddings.embeddings
        weights.update(_norm("encoder/rel_embeddings/LayerNorm",
                             encoder.relative_embeddings.layer_norm))
    if encoder.final_norm is not None:
        weights.update(_norm("encoder/final_norm", encoder.final_norm))
    if encoder.pooler is not None:
        weights.update(_dense("pooler/dense", encoder.pooler))
    return weights


def einsum_source(name, config, top, block, block_path):
    """The `Source` of a canonical weight in an encoder built from Keras `EinsumDense` layers.

    Model Garden and keras-hub keep attention heads on their own axis: query/key/value
    kernels are `[hidden, heads, head_size]`, biases `[heads, head_size]`, the attention
    output kernel `[heads, head_size, hidden]`.

    Args:
        name: canonical weight name.
        config: the `BertConfig` giving the head count.
        top: canonical name prefix -> key prefix, for weights outside the blocks.
        block: canonical layer inside a block (`attention/self/query`) -> its key.
        block_path: key prefix of block `index`, a format string such as
            `"transformer_layer_{index}/"`.
    """
    match = re.fullmatch(r"encoder/layer_(\d+)/(.+)/(\w+)", name)
    if match:
        index, layer, param = match.groups()
        key = f"{block_path.format(index=index)}{block[layer]}/{param}"
        heads = (config.num_heads, config.head_size)
        if layer.startswith("attention/self/"):
            return Source(key, shape=(config.hidden_size, *heads) if param == "kernel" else heads)
        if layer == "attention/output/dense" and param == "kernel":
            return Source(key, shape=(*heads, config.hidden_size))
        return Source(key)
    for ours, theirs in top.items():
        if name.startswith(ours):
            return Source(theirs + name[len(ours):])
    return Source(name)  # no counterpart in the format (a final norm): reported missing


def natural_key(name):
    """Sort `layer_10` after `layer_9`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def assign_checked(variables, reader, source_of: Callable[[str], Source],
                   in_scope: Callable[[str], bool]):
    """Check every weight of `variables` against `reader`, then assign them all.

    Args:
        variables: canonical name -> Keras variable, as from `encoder_variables`.
        reader: a `CheckpointReader`.
        source_of: canonical name -> its `Source` in the checkpoint.
        in_scope: whether a checkpoint key belongs to what is being loaded; keys in scope
            that no variable uses are reported as unexpected.

    Raises:
        CheckpointMismatchError: listing every missing, unexpected and mis-shaped weight,
            before any variable is changed.
        CheckpointError: when a file cannot be read, again before any variable is changed.
    """
    sources = {name: source_of(name) for name in variables}
    shapes = {name: tuple(variable.shape) for name, variable in variables.items()}
    missing, mis_shaped = [], []
    for name, source in sources.items():
        expected = source.stored_shape(shapes[name])
        stored = reader.shapes.get(source.key)
        if stored is None:
            missing.append(f"{source.key} {list(expected)}")
        elif tuple(stored) != expected:
            mis_shaped.append(f"{source.key}: checkpoint has {list(stored)}, "
                              f"the model expects {list(expected)}")
    used = {source.key for source in sources.values()}
    unexpected = sorted((key for key in reader.shapes if in_scope(key) and key not in used),
                        key=natural_key)
    if missing or unexpected or mis_shaped:
        raise CheckpointMismatchError(reader.path, missing, unexpected, mis_shaped)
    # Read everything first: a file that fails half-way must leave the model untouched.
    values = {name: source.to_keras(reader.read(source.key), shapes[name])
              for name, source in sources.items()}
    for name, variable in variables.items():
        variable.assign(values[name].astype(variable.dtype))


# The pretraining heads' weights under the names `read_pretraining_head_weights` returns.
HEAD_GROUPS = {
    "mlm": ("mlm/transform/kernel", "mlm/transform/bias", "mlm/layer_norm/gamma",
            "mlm/layer_norm/beta", "mlm/output_bias"),
    "nsp": ("nsp/kernel", "nsp/bias"),
    # ELECTRA's discriminator: which tokens were replaced.
    "rtd": ("rtd/dense/kernel", "rtd/dense/bias", "rtd/output/kernel", "rtd/output/bias"),
}


def read_head_groups(reader, sources: dict[str, Source]):
    """Read each head group (MLM, NSP) whose weights are all present, in Keras layout.

    Returns `None` when the checkpoint holds no head at all; a group only partly present
    raises `CheckpointMismatchError` naming what is missing.
    """
    heads, missing = {}, []
    for names in HEAD_GROUPS.values():
        # A family's head may lack some weights (ModernBERT's its biases), or all of them
        # (RoBERTa's sentence head).
        names = [name for name in names if name in sources]
        if not names:
            continue
        present = [name for name in names if sources[name].key in reader.shapes]
        if len(present) == len(names):
            for name in names:
                array = reader.read(sources[name].key)
                heads[name] = (array.T if sources[name].transpose else array).astype(np.float32)
        elif present:
            missing.extend(sources[name].key for name in names if name not in present)
    if missing:
        raise CheckpointMismatchError(reader.path, missing=missing)
    return heads or None
