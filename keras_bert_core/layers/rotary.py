"""Rotary position embeddings (RoFormer; ModernBERT's): queries and keys turn by position."""

from keras import ops


def rotary_tables(position_ids, head_size, theta):
    """float32 `(cos, sin)`, each `[batch, seq, 1, head_size]`, for int32 `position_ids`
    `[batch, seq]`: frequency `i` turns by `theta ** (-2i / head_size)` per position, the
    table's two halves repeating each other (Hugging Face's layout, `rotate_half`).

    Example:
    >>> import numpy as np
    >>> cos, sin = rotary_tables(np.array([[0, 1, 2]], "int32"), head_size=4, theta=10000.0)
    >>> tuple(cos.shape), float(cos[0, 0, 0, 0]), float(sin[0, 0, 0, 0])
    ((1, 3, 1, 4), 1.0, 0.0)
    """
    exponents = ops.arange(0, head_size, 2, dtype="float32") / float(head_size)
    inverse_frequencies = ops.power(float(theta), -exponents)  # [head_size / 2]
    angles = ops.expand_dims(ops.cast(position_ids, "float32"), -1) * inverse_frequencies
    angles = ops.expand_dims(ops.concatenate([angles, angles], axis=-1), 2)
    return ops.cos(angles), ops.sin(angles)


def rotate(x, cos, sin):
    """`x` `[batch, seq, heads, head_size]` turned by the tables of `rotary_tables`,
    computed in float32 and returned in `x`'s dtype.

    Example:
    >>> import numpy as np
    >>> cos, sin = rotary_tables(np.array([[0, 5]], "int32"), head_size=4, theta=100.0)
    >>> x = np.random.rand(1, 2, 3, 4).astype("float32")
    >>> np.allclose(np.linalg.norm(rotate(x, cos, sin), axis=-1), np.linalg.norm(x, axis=-1))
    True
    """
    dtype = x.dtype
    x = ops.cast(x, "float32")
    half = x.shape[-1] // 2
    turned = ops.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return ops.cast(x * cos + turned * sin, dtype)
