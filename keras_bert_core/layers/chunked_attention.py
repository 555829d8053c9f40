"""Dot-product attention that never holds a full length x length score matrix: global
attention in query chunks, sliding-window (local) attention in key bands."""

import tensorflow as tf
from keras import ops

from keras_bert_core.errors import ConfigError
from keras_bert_core.layers.attention_masks import MASK_PENALTY, allowed_keys

# Queries per chunk of global attention: a chunk's scores are [batch, heads, chunk, length]
# float32 (bench/local_attention.py and bench/modernbert_encoder.py measure the memory this
# bounds).
DEFAULT_CHUNK_SIZE = 128


def attend(query, key, value, padding_mask, window=None, chunk_size=DEFAULT_CHUNK_SIZE,
           dropout=None):
    """Scaled dot-product attention of every head, global or within a sliding window.

    Scores and softmax run in float32 under mixed precision (the context comes back in the
    value's dtype). The sequence length may be dynamic and any size: the chunks and bands are
    padded inside.

    - `window=None`: global attention, computed `chunk_size` queries at a time (each chunk
      against all keys), so a layer holds `[batch, heads, chunk_size, seq]` scores at once,
      not `[batch, heads, seq, seq]`. A sequence of at most `chunk_size` is one chunk.
      Every query attends as `attention_bias(padding_mask)` says.
    - `window=w`: Hugging Face ModernBERT's sliding window (`local_attention=w`): a query at
      position i attends to the keys j with `|i - j| <= w // 2` that `attention_bias` allows
      (real keys of its own document; any real key for a padding query). The sequence is cut
      into blocks of `w // 2` queries, each scored against the three blocks around it:
      `[batch, heads, seq, 3 * (w // 2)]` scores, growing with seq x w, not seq squared. A
      query that may attend to no key (padding far from any text) gets zeros.

    Args:
        query: `[batch, heads, seq, head_size]`, already scaled by `head_size ** -0.5` (and
            rotated, for rotary positions).
        key: `[batch, heads, seq, head_size]`.
        value: `[batch, heads, seq, head_size]`.
        padding_mask: int32 `[batch, seq]`: 0 at padding, a positive document id at real
            tokens (1, 2, 3... for documents packed into one row; attention stays within a
            document).
        window: `None` for global attention, or ModernBERT's `local_attention` (the whole
            window, both sides: 128 lets a query see 64 keys to each side).
        chunk_size: queries per chunk of global attention (ignored with a window).
        dropout: `None`, or a callable applied to the attention probabilities, for example
            `lambda p: dropout_layer(p, training=training)`.

    Returns:
        The context `[batch, heads, seq, head_size]`.

    Example:
    >>> import numpy as np
    >>> q, k, v = np.random.default_rng(0).normal(size=(3, 2, 4, 300, 8)).astype("float32")
    >>> mask = np.ones((2, 300), "int32")
    >>> mask[1, 250:] = 0  # the second text has 250 tokens
    >>> tuple(attend(q, k, v, mask, window=128).shape)
    (2, 4, 300, 8)
    >>> full = attend(q, k, v, mask, chunk_size=64)  # global, 5 chunks of queries
    >>> bool(np.allclose(full, attend(q, k, v, mask, chunk_size=512), atol=1e-5))
    True
    """
    if window is None:
        if not isinstance(chunk_size, int) or chunk_size < 1:
            raise ConfigError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        return _query_chunked_attention(query, key, value, padding_mask, chunk_size, dropout)
    if not isinstance(window, int) or window < 0:
        raise ConfigError(f"window must be None or a non-negative integer, got {window!r}")
    return _banded_attention(query, key, value, padding_mask, window // 2, dropout)


def _probabilities(scores, bias, dtype, dropout):
    """Softmax of `scores + bias` in float32, cast to `dtype`, then dropout."""
    probs = ops.cast(ops.softmax(ops.cast(scores, "float32") + bias, axis=-1), dtype)
    return probs if dropout is None else dropout(probs)


def _pad_sequence(x, axis, padded_length):
    """Zero-pads axis `axis` of `x` to `padded_length`."""
    widths = [[0, 0] for _ in range(len(x.shape))]
    widths[axis][1] = padded_length - ops.shape(x)[axis]
    return ops.pad(x, widths)


def _query_chunked_attention(query, key, value, padding_mask, chunk_size, dropout):
    batch, heads, length, size = ops.shape(query)
    chunk = ops.maximum(ops.minimum(chunk_size, length), 1)
    num_chunks = (length + chunk - 1) // chunk
    padded = num_chunks * chunk
    queries = _pad_sequence(query, 2, padded)
    docs = _pad_sequence(padding_mask, 1, padded)
    key_t = ops.swapaxes(key, 2, 3)

    # One chunk of queries per loop step, so only one chunk's scores live at a time. Each
    # step writes its context into the carried [chunks, rows, chunk, size] output at its own
    # chunk (a select on the chunk index): this converts to TFLite builtins and compiles with XLA,
    # where stacking with ops.map needs TensorList ops (TFLite lowers them only for static
    # shapes) and a pad by the loop index is no XLA compile-time constant.
    rows = batch * heads

    def add_chunk(index, context):
        start = index * chunk
        chunk_docs = ops.slice(docs, (0, start), (batch, chunk))
        bias = ops.where(allowed_keys(chunk_docs, padding_mask), 0.0, MASK_PENALTY)
        scores = ops.matmul(ops.slice(queries, (0, 0, start, 0), (batch, heads, chunk, size)),
                            key_t)  # [batch, heads, chunk, seq]
        probs = _probabilities(scores, ops.expand_dims(bias, 1), value.dtype, dropout)
        at_chunk = ops.equal(ops.arange(num_chunks, dtype="int32"), index)
        context = ops.where(ops.reshape(at_chunk, (num_chunks, 1, 1, 1)),
                            ops.reshape(ops.matmul(probs, value), (1, rows, chunk, size)),
                            context)
        return ops.reshape(context, shape)  # keeps a static shape static in the loop

    initial = ops.zeros((num_chunks, rows, chunk, size), value.dtype)
    shape = ops.shape(initial)  # Python ints where the sizes are known when tracing
    # One iteration at a time: TensorFlow's default runs up to ten at once, and the scores of
    # ten chunks in flight cost what chunking was meant to save.
    _, context = tf.while_loop(lambda index, _: index < num_chunks,
                               lambda index, context: (index + 1, add_chunk(index, context)),
                               (0, initial), parallel_iterations=1)
    context = ops.reshape(ops.transpose(context, (1, 0, 2, 3)), (batch, heads, padded, size))
    return ops.slice(context, (0, 0, 0, 0), (batch, heads, length, size))


def _banded_attention(query, key, value, padding_mask, half_window, dropout):
    batch, heads, length, size = ops.shape(query)
    # Blocks of half_window queries see all their keys in the three blocks around them; a
    # sequence shorter than a block is one block of its own length (no padding to score).
    block = ops.maximum(ops.minimum(half_window, length), 1)
    num_blocks = (length + block - 1) // block
    padded = num_blocks * block
    # Each block's band of keys: the blocks before, at and after it, shifted inwards at the
    # ends of the sequence (so no band reaches outside it) and the whole sequence when it has
    # fewer than three blocks.
    span = ops.minimum(num_blocks, 3) * block
    starts = ops.clip((ops.arange(num_blocks, dtype="int32") - 1) * block, 0, padded - span)
    key_positions = ops.expand_dims(starts, 1) + ops.arange(span, dtype="int32")  # [blocks, span]
    query_positions = ops.reshape(ops.arange(padded, dtype="int32"), (num_blocks, block))
    distance = ops.expand_dims(key_positions, 1) - ops.expand_dims(query_positions, 2)
    in_window = ops.less_equal(ops.abs(distance), half_window)  # [blocks, block, span]

    docs = _pad_sequence(padding_mask, 1, padded)
    allowed = ops.logical_and(allowed_keys(ops.reshape(docs, (batch, num_blocks, block)),
                                           ops.take(docs, key_positions, axis=1)), in_window)
    bias = ops.reshape(ops.where(allowed, 0.0, MASK_PENALTY), (batch, 1, padded, span))

    rows = batch * heads
    queries = ops.reshape(_pad_sequence(query, 2, padded), (rows, num_blocks, block, size))

    def bands(x):  # [rows, blocks, span, size]
        return ops.take(ops.reshape(_pad_sequence(x, 2, padded), (rows, padded, size)),
                        key_positions, axis=1)

    scores = ops.matmul(queries, ops.swapaxes(bands(key), 2, 3))  # [rows, blocks, block, span]
    probs = _probabilities(ops.reshape(scores, (batch, heads, padded, span)), bias, value.dtype,
                           dropout)
    context = ops.matmul(ops.reshape(probs, (rows, num_blocks, block, span)), bands(value))
    # A query with no key to attend to (padding out of reach of any text) gets zeros, not a
    # mean over masked keys.
    has_keys = ops.cast(ops.any(allowed, axis=-1), context.dtype)
    context = ops.reshape(context, (batch, heads, padded, size)) * ops.reshape(
        has_keys, (batch, 1, padded, 1))
    return ops.slice(context, (0, 0, 0, 0), (batch, heads, length, size))
