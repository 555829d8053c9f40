"""`SentencePooling`: one vector per text from the encoder's token vectors, as
sentence-transformers' `Pooling` module computes it."""

import keras
from keras import ops

# sentence-transformers' pooling modes (its legacy config flags concatenate them in this order).
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len", "last_token")
# Where `max` pools, padding positions read this (sentence-transformers' value).
_PADDING_FLOOR = -1e9


@keras.saving.register_keras_serializable(package="keras_bert_core")
class SentencePooling(keras.layers.Layer):
    """Pools the token vectors of each text into one vector, padding left out.

    Modes (sentence-transformers' `Pooling`, same semantics):

    - `"mean"`: the mean of the real tokens' vectors;
    - `"cls"`: the first token's vector;
    - `"max"`: the per-feature maximum over the real tokens;
    - `"mean_sqrt_len"`: the sum of the real tokens' vectors over the square root of
      their count;
    - `"last_token"`: the vector of the last real token.

    Several modes give their vectors concatenated in the order given (as
    sentence-transformers concatenates them). Pooling runs in float32, also under mixed
    precision.

    Args:
        modes: one mode, or a list of modes.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        sequence_output: `[batch, seq, hidden]`.
        padding_mask: int `[batch, seq]`, above 0 at real tokens (document ids count as
            real), 0 at padding.

    Returns float32 `[batch, hidden * len(modes)]`.

    Example:
    >>> import numpy as np
    >>> tokens = np.array([[[1.0], [3.0], [8.0]]], "float32")
    >>> mask = np.array([[1, 1, 0]], "int32")
    >>> SentencePooling("mean")(tokens, mask).numpy().tolist()
    [[2.0]]
    >>> SentencePooling(["max", "last_token"])(tokens, mask).numpy().tolist()
    [[3.0, 3.0]]
    """

    def __init__(self, modes="mean", **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        modes = [modes] if isinstance(modes, str) else list(modes)
        unknown = [mode for mode in modes if mode not in POOLING_MODES]
        if not modes or unknown or len(set(modes)) < len(modes):
            raise ValueError(f"pooling modes must be one or more of {POOLING_MODES}, each "
                             f"once; got {modes!r}")
        self.modes = modes

    def call(self, sequence_output, padding_mask):
        tokens = ops.cast(sequence_output, "float32")
        real = ops.cast(ops.greater(padding_mask, 0), "float32")  # [batch, seq]
        weights = ops.expand_dims(real, -1)
        count = ops.maximum(ops.sum(real, axis=1, keepdims=True), 1e-9)  # [batch, 1]
        summed = ops.sum(tokens * weights, axis=1)
        pooled = {}
        if "cls" in self.modes:
            pooled["cls"] = tokens[:, 0, :]
        if "max" in self.modes:
            pooled["max"] = ops.max(ops.where(weights > 0, tokens, _PADDING_FLOOR), axis=1)
        if "mean" in self.modes:
            pooled["mean"] = summed / count
        if "mean_sqrt_len" in self.modes:
            pooled["mean_sqrt_len"] = summed / ops.sqrt(count)
        if "last_token" in self.modes:
            positions = ops.arange(ops.shape(real)[1], dtype="int32")
            last = ops.max(ops.where(real > 0, positions, 0), axis=1)  # [batch]
            one_hot = ops.one_hot(last, ops.shape(real)[1], dtype="float32")
            pooled["last_token"] = ops.sum(tokens * ops.expand_dims(one_hot, -1), axis=1)
        vectors = [pooled[mode] for mode in self.modes]
        return vectors[0] if len(vectors) == 1 else ops.concatenate(vectors, axis=-1)

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape):
        hidden = sequence_output_shape[-1]
        return (sequence_output_shape[0], None if hidden is None else hidden * len(self.modes))

    def get_config(self):
        return {**super().get_config(), "modes": list(self.modes)}
