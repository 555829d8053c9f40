"""Texts longer than the model's window: overlapping windows of their wordpieces, packed as
the model's rows, and back from the windows to the whole text, each piece from the window
where it sits most centrally (SQuAD's rule). TensorFlow core ops that TFLite converts, so
the windows are made and joined inside both exports; `window_spans` is the same arithmetic
in numpy, for the data that Python prepares."""

import numpy as np
import tensorflow as tf

# A piece is taken from the window with the most context on its shorter side; on a tie,
# the longer window (SQuAD's `_check_is_max_context`), then the first.
LENGTH_TIE_BREAK = 0.01


def check_window_options(seq_length, stride, max_windows):
    """Raises ValueError unless `stride` (wordpieces between the starts of a text's
    windows) fits a window of `seq_length` and `max_windows` is a positive integer.

    Example:
    >>> check_window_options(128, 64, 8)
    >>> check_window_options(128, 200, 8)
    Traceback (most recent call last):
    ...
    ValueError: stride must be between 1 and 126 (seq_length 128 less [CLS] and [SEP]), got 200
    """
    room = int(seq_length) - 2
    if not isinstance(stride, int) or isinstance(stride, bool) or not 1 <= stride <= room:
        raise ValueError(f"stride must be between 1 and {room} (seq_length {seq_length} less "
                         f"[CLS] and [SEP]), got {stride!r}")
    if (not isinstance(max_windows, int) or isinstance(max_windows, bool)
            or max_windows < 1):
        raise ValueError(f"max_windows must be a positive integer, got {max_windows!r}")


def window_counts(lengths, room, stride, max_windows):
    """Windows per text of `lengths` pieces: one up to `room` pieces, then one more per
    `stride` pieces past it, at most `max_windows` (later pieces are cut). Tensors or numpy.

    Example:
    >>> window_counts(np.array([0, 6, 7, 12, 100]), room=6, stride=3, max_windows=4).tolist()
    [1, 1, 2, 3, 4]
    """
    extra = np.maximum(lengths - room, 0) if isinstance(lengths, np.ndarray) else \
        tf.maximum(lengths - room, 0)
    counts = 1 + (extra + stride - 1) // stride
    return np.minimum(counts, max_windows) if isinstance(counts, np.ndarray) else \
        tf.minimum(counts, max_windows)


def window_spans(length, room, stride, max_windows):
    """`[(start, length), ...]` of the windows of a text of `length` pieces (numpy's twin
    of `pack_windows`, for data prepared in Python).

    Example:
    >>> window_spans(12, room=6, stride=3, max_windows=4)
    [(0, 6), (3, 6), (6, 6)]
    """
    count = int(window_counts(np.array(length), room, stride, max_windows))
    return [(index * stride, min(room, length - index * stride)) for index in range(count)]


def pack_windows(packer, ids, stride, max_windows, static_shape):
    """Each text's windows, packed `[CLS] pieces [SEP]` by `packer`.

    Args:
        packer: a `BertPacker` (its `seq_length` is the window's).
        ids: int ragged `[batch, (pieces)]`, a tokenizer's output.
        stride: pieces between the starts of a text's windows.
        max_windows: the most windows of a text.
        static_shape: True: `[batch, max_windows, seq_length]`; False: as many windows as
            the batch's longest text has, padded to the longest window (a multiple of 8).

    Returns:
        dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, windows, width]`;
        a text's missing windows are padding throughout (their `padding_mask` all 0).

    Example:
    >>> from keras_bert_core.text.packer import BertPacker
    >>> packer = BertPacker(seq_length=6, cls_id=2, sep_id=3, pad_id=0)
    >>> out = pack_windows(packer, tf.ragged.constant([[10, 11, 12, 13, 14, 15], [16]]),
    ...                    stride=2, max_windows=3, static_shape=True)
    >>> out["token_ids"].numpy().tolist()[0]
    [[2, 10, 11, 12, 13, 3], [2, 12, 13, 14, 15, 3], [0, 0, 0, 0, 0, 0]]
    >>> out["padding_mask"].numpy()[1].tolist()
    [[1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
    """
    splits = tf.cast(ids.row_splits, tf.int32)
    values, starts, lengths = tf.cast(ids.values, tf.int32), splits[:-1], splits[1:] - splits[:-1]
    room = packer.seq_length - 2
    counts = window_counts(lengths, room, stride, max_windows)
    windows = max_windows if static_shape else tf.maximum(tf.reduce_max(counts), 1)
    offset = tf.expand_dims(tf.range(windows), 0) * stride  # [1, windows]
    exists = tf.expand_dims(tf.range(windows), 0) < tf.expand_dims(counts, 1)
    row_starts = tf.reshape(tf.expand_dims(starts, 1) + offset, [-1])
    row_lengths = tf.reshape(
        tf.where(exists, tf.minimum(room, tf.expand_dims(lengths, 1) - offset), 0), [-1])
    rows = packer.pack_rows(values, row_starts, row_lengths, static_shape)
    real = tf.reshape(exists, [-1, 1])
    fill = {"token_ids": packer.pad_id}
    width = packer.seq_length if static_shape else tf.shape(rows["token_ids"])[1]
    return {name: tf.reshape(tf.where(real, value, fill.get(name, 0)), [-1, windows, width])
            for name, value in rows.items()}


def join_windows(window_values, padding_mask, stride):
    """Per-position values of a text's windows (e.g. a tagger's logits) back to the text:
    each piece from the window where it sits most centrally, `[CLS]` from the first window
    and `[SEP]` from the last.

    Args:
        window_values: `[batch, windows, width, ...]`, by window position.
        padding_mask: the windows' int32 `[batch, windows, width]` (see `pack_windows`).
        stride: the windows' stride.

    Returns:
        `(values, padding_mask)`: `[batch, length, ...]` and int32 `[batch, length]`, by
        position in the whole text packed `[CLS] pieces [SEP]` (piece `k` at `k + 1`).

    Example:
    >>> from keras_bert_core.text.packer import BertPacker
    >>> packer = BertPacker(seq_length=6, cls_id=2, sep_id=3, pad_id=0)
    >>> windows = pack_windows(packer, tf.ragged.constant([[10, 11, 12, 13, 14, 15], [16]]),
    ...                        stride=2, max_windows=3, static_shape=False)
    >>> ids, mask = join_windows(windows["token_ids"], windows["padding_mask"], stride=2)
    >>> (ids * mask).numpy().tolist()
    [[2, 10, 11, 12, 13, 14, 15, 3], [2, 16, 3, 0, 0, 0, 0, 0]]
    """
    mask = tf.cast(padding_mask > 0, tf.int32)
    shape = tf.shape(mask)
    windows = shape[1]
    exists = tf.reduce_max(mask, axis=2)  # [batch, windows]
    real_windows = tf.reduce_sum(exists, axis=1)
    pieces = tf.maximum(tf.reduce_sum(mask, axis=2) - 2, 0)
    start = tf.expand_dims(tf.range(windows) * stride, 0)  # [1, windows]
    covered = tf.reduce_max((start + pieces) * exists, axis=1)  # pieces of each text
    length = tf.reduce_max(covered) + 2
    position = tf.range(length)  # in the text's pack
    # [batch, length, windows]: where piece `position - 1` sits in each window.
    inside = tf.expand_dims(tf.expand_dims(position, 0), 2) - tf.expand_dims(start, 1)
    left = inside - 1
    right = tf.expand_dims(pieces, 1) - inside
    holds = (left >= 0) & (right >= 0)
    score = tf.cast(tf.minimum(left, right), tf.float32) + LENGTH_TIE_BREAK * tf.cast(
        tf.expand_dims(pieces, 1), tf.float32)
    best = tf.argmax(tf.where(holds, score, -1.0), axis=2, output_type=tf.int32)
    text_position = tf.expand_dims(position, 0)  # [1, length]
    last = tf.expand_dims(tf.maximum(real_windows - 1, 0), 1)
    sep = text_position == tf.expand_dims(covered + 1, 1)
    window = tf.where(text_position == 0, 0, tf.where(sep, last, best))
    window_start = tf.gather(tf.reshape(start, [-1]), window)
    column = tf.where(text_position == 0, 0, text_position - window_start)
    real = text_position <= tf.expand_dims(covered + 1, 1)
    column = tf.where(real, tf.minimum(column, shape[2] - 1), 0)
    window = tf.where(real, window, 0)
    rows = tf.broadcast_to(tf.expand_dims(tf.range(shape[0]), 1), tf.shape(window))
    values = tf.gather_nd(window_values, tf.stack([rows, window, column], axis=-1))
    return values, tf.cast(real, tf.int32)
