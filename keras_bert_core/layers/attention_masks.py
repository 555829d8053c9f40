"""Which keys a query may attend to, from an int32 padding (or document) mask."""

from keras import ops

# Added to the scores of masked keys; large but finite, so fully masked rows stay NaN-free.
MASK_PENALTY = -1e9


def allowed_keys(query_docs, key_docs):
    """Boolean `[..., query, key]`: may each query attend to each key?

    Args:
        query_docs: int32 `[..., query]`, 0 at padding, a positive document id elsewhere.
        key_docs: int32 `[..., key]`, the same for the keys.

    A query attends to the real keys of its own document; a padding query attends to every
    real key (its output is never used, and this keeps it equal to the reference BERT's).

    Example:
    >>> import numpy as np
    >>> mask = np.array([1, 1, 2, 0], "int32")
    >>> ops.convert_to_numpy(allowed_keys(mask, mask)).astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 0]]
    """
    # expand_dims, not [:, None]: TFLite cannot convert a new axis of a dynamic shape.
    query_doc, key_doc = ops.expand_dims(query_docs, -1), ops.expand_dims(key_docs, -2)
    # ops.equal, not `==`: on symbolic Keras tensors `==` is Python identity, not elementwise.
    same_doc = ops.logical_or(ops.equal(query_doc, key_doc), ops.equal(query_doc, 0))
    return ops.logical_and(ops.greater(key_doc, 0), same_doc)


def attention_bias(padding_mask):
    """Additive attention bias `[batch, 1, query, key]` from an int32 mask `[batch, seq]`.

    The mask holds 0 at padding and a positive document id at real tokens: 1 everywhere for
    ordinary inputs, 1, 2, 3... for several documents packed into one row. A query attends to
    the keys of its own document; padding queries attend to every real key (their outputs are
    never used, and this keeps them equal to the reference BERT's).
    """
    bias = ops.where(allowed_keys(padding_mask, padding_mask), 0.0, MASK_PENALTY)
    # float32 even under mixed precision: the penalty overflows float16.
    return ops.cast(ops.expand_dims(bias, 1), "float32")
