"""Batches of strings in the graph: one string or a 1-D batch in, the static batch size kept,
rows routed to two tokenizing functions, texts cut at a UTF-8 character boundary."""

import tensorflow as tf

# Each route is a chain of single-threaded string ops: from this many rows on, it runs on two
# halves of them side by side (with fewer rows the second chain of ops costs about what it
# gains; bench/tokenizer_throughput.py measures lines/s by batch size).
_ROWS_TO_SPLIT_A_ROUTE = 32


def as_batch(inputs):
    """Returns (1-D string tensor, whether the input was a single string)."""
    text = tf.convert_to_tensor(inputs, dtype=tf.string)
    if text.shape.rank == 0:
        return tf.expand_dims(text, 0), True
    if text.shape.rank != 1:
        raise ValueError(f"Expected a string or a 1-D batch of strings, got shape {text.shape}.")
    return text, False


def keep_static_batch_size(ragged, text):
    """Gives `ragged` the static batch size of `text`, when known (XLA and TPUs need it)."""
    if text.shape[0] is not None:
        ragged.row_splits.set_shape([text.shape[0] + 1])


def route_rows(text, selected, tokenize_selected, tokenize_others, dtypes):
    """Tokenizes the selected rows of `text` with one function and the others with another
    (either on two halves of its rows side by side, when it has many); returns their ragged
    results (one per dtype in `dtypes`) with rows in input order."""
    rows = tf.range(tf.shape(text)[0])
    selected_rows = tf.boolean_mask(rows, selected)
    other_rows = tf.boolean_mask(rows, ~selected)

    def tokenize_rows(tokenize, part):
        # A route with no rows is skipped, not run on an empty batch: a one-text request
        # (TF Serving's usual) takes one route, and each route is ~50 ops.
        def no_rows():
            return tuple(
                tf.RaggedTensor.from_row_splits(tf.zeros([0], dtype), tf.zeros([1], tf.int64),
                                                validate=False)
                for dtype in dtypes
            )

        def all_rows():
            return tokenize(tf.gather(text, part))

        size = tf.size(part)

        def halves():
            half = size // 2
            pieces = zip(tokenize(tf.gather(text, part[:half])),
                         tokenize(tf.gather(text, part[half:])), strict=True)
            return tuple(tf.concat([a, b], 0) for a, b in pieces)

        branch = tf.minimum(size, 1) + tf.cast(size >= _ROWS_TO_SPLIT_A_ROUTE, tf.int32)
        return tf.switch_case(branch, [no_rows, all_rows, halves])

    order = tf.math.invert_permutation(tf.concat([selected_rows, other_rows], 0))
    parts = zip(
        tokenize_rows(tokenize_selected, selected_rows),
        tokenize_rows(tokenize_others, other_rows),
        strict=True,
    )
    return tuple(tf.gather(tf.concat([a, b], 0), order) for a, b in parts)


def merge_words(ragged):
    """`[rows, (words), (pieces)]` -> `[rows, (pieces)]`, as `merge_dims(1, 2)` but without
    its validating asserts: row splits made by ops are valid, and each assert is a `tf.cond`
    that every trace builds (two graphs) and every tf.data iterator instantiates again
    (bench/tokenizer_trace_time.py)."""
    return tf.RaggedTensor.from_row_splits(
        ragged.values.values, tf.gather(ragged.values.row_splits, ragged.row_splits),
        validate=False)


def check_max_text_bytes(max_text_bytes):
    """Raises ValueError unless `max_text_bytes` is None or an integer of at least 4 (one
    UTF-8 character of any length fits)."""
    if max_text_bytes is not None and (not isinstance(max_text_bytes, int) or isinstance(
            max_text_bytes, bool) or max_text_bytes < 4):
        raise ValueError("max_text_bytes must be an integer of at least 4 or None, got "
                         f"{max_text_bytes!r}")


def cut_texts(texts, max_bytes):
    """Each string of `texts` cut to at most `max_bytes` bytes (None: as it is), at a UTF-8
    character boundary, with TensorFlow core ops.

    Example:
    >>> cut_texts(tf.constant(["abcdef", "ab", "abcé"]), 4).numpy().tolist()
    [b'abcd', b'ab', b'abc']
    """
    if max_bytes is None:
        return texts
    length = tf.strings.length(texts)
    # The byte at `max_bytes`, the first one cut off, and the three before it (the longest
    # UTF-8 character has four bytes); "\0"s for texts that are not cut.
    start = tf.minimum(length, max_bytes - 3)
    window = tf.strings.substr(texts, start, tf.fill(tf.shape(start), 4))
    window = tf.where(length > max_bytes, window, "\0\0\0\0")
    window = tf.io.decode_raw(window, tf.uint8)
    continuation = tf.cast(tf.bitwise.bitwise_and(window, 0xC0) == 0x80, tf.int32)
    # A cut inside a character moves back to its first byte.
    back = tf.reduce_sum(tf.math.cumprod(continuation[..., ::-1], axis=-1), axis=-1)
    return tf.strings.substr(texts, tf.zeros_like(back), max_bytes - back)
