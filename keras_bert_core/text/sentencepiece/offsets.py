"""Byte offsets of the pieces in the input texts: spans of the preprocessed text mapped back
to input characters, and the fast op's pieces placed with `SentencepieceTokenizeWithOffsetsOp`'s
offsets (the default pipeline)."""

import numpy as np
import tensorflow as tf

from keras_bert_core.text.sentencepiece.characters import utf8_lengths


def input_offsets(chars, span_ends, out_chars, sources, out_splits, starts, ends):
    """Byte offsets in the input texts (flat int64) of pieces that `starts` and `ends`
    (ragged, int64) locate in the preprocessed texts (TensorFlow core ops)."""
    byte_splits = tf.pad(tf.cumsum(utf8_lengths(out_chars)), [[1, 0]])
    text_starts = tf.gather(byte_splits, out_splits)
    rows = tf.cast(starts.value_rowids(), tf.int32)
    begin = tf.gather(text_starts, rows) + tf.cast(starts.flat_values, tf.int32)
    end = tf.gather(text_starts, rows) + tf.cast(ends.flat_values, tf.int32)
    text_end = tf.gather(text_starts, rows + 1)
    last = tf.maximum(tf.size(out_chars) - 1, 0)

    def source(byte):  # the input character whose output holds the byte
        out = tf.searchsorted(byte_splits, byte, side="right") - 1
        return tf.gather(sources, tf.clip_by_value(out, 0, last))

    return input_span(chars, span_ends, source, begin, end, text_end)


def input_span(chars, span_ends, source, begin, end, text_end):
    """Byte offsets in the input texts (flat int64) of spans `[begin, end)` of preprocessed
    text, whose units (bytes or characters) `source` maps to the input character whose
    output holds them; `text_end`: where each span's text ends. An empty span points where
    its unit's character starts (at the end of the text, where the last character's span
    ends: never seen)."""
    input_begin = tf.where(begin < text_end, tf.gather(chars.starts, source(begin)),
                           tf.gather(span_ends, source(text_end - 1)))
    input_end = tf.where(end > begin, tf.gather(span_ends, source(end - 1)), input_begin)
    return tf.cast(input_begin, tf.int64), tf.cast(input_end, tf.int64)


class PieceOffsets(tf.Module):
    """Locates the pieces of `FastSentencepieceTokenize` with the offsets that tf.text's
    `SentencepieceTokenizeWithOffsetsOp` gives its own pieces (that op's older
    `sentencepiece` may order tied pieces differently; the fast op gives no offsets).

    Both ops split the same normalized text, so every piece is placed by its characters
    counted from the start of its text (an unknown piece counts as one: the two ops differ
    in the order of tied pieces, not in what is unknown). A piece boundary that is one of the
    op's takes the op's offset; one inside an op piece (only where tied pieces are ordered
    differently, e.g. `"0", "00"` against `"00", "0"`) is counted in bytes into that piece
    when the text there spells the piece (`▁` a space, or nothing for the dummy prefix), and
    otherwise (the normalizer changed it) gives the op piece's whole span."""

    def __init__(self, pieces, unk_id):
        super().__init__()
        spellings = [piece.replace("\u2581", " ") for piece in pieces]
        # One character; no boundary falls inside it, so its spelling is never compared.
        spellings[unk_id] = "\u2581"
        byte_ends = [np.cumsum([0] + [len(c.encode("utf-8")) for c in s]) for s in spellings]
        self._char_counts = tf.constant([len(s) for s in spellings], tf.int64)
        self._byte_ends = tf.constant(np.concatenate(byte_ends), tf.int64)
        self._byte_ends_splits = tf.constant(
            np.cumsum([0] + [len(ends) for ends in byte_ends])[:-1], tf.int64)
        self._spellings = tf.constant(spellings)

    def _char_spans(self, ids):
        """Row, and first and last character + 1 in its normalized text, of each piece,
        as sortable keys `row * 2**32 + character`."""
        lengths = tf.gather(self._char_counts, ids.flat_values)
        ends = tf.cumsum(lengths)
        rows = tf.cast(ids.value_rowids(), tf.int64)
        row_start = tf.gather(tf.pad(ends, [[1, 0]]),
                              tf.gather(tf.cast(ids.row_splits, tf.int64), rows))
        row_key = rows * 2**32 - row_start
        return rows, row_key + ends - lengths, row_key + ends

    def __call__(self, spelled, ids, op_ids, op_starts, op_ends):
        """Flat int64 byte offsets `(starts, ends)` in `spelled` of the pieces `ids`, from the
        op's `op_ids`, `op_starts` and `op_ends` (ragged, same rows)."""
        rows, begin_keys, end_keys = self._char_spans(ids)
        _, op_begin_keys, op_end_keys = self._char_spans(op_ids)
        # One sentinel op piece keeps the gathers valid where a text has none.
        op_begin_keys, op_end_keys = (tf.pad(k, [[0, 1]], constant_values=-1)
                                      for k in (op_begin_keys, op_end_keys))
        op_ids, op_starts, op_ends = (tf.pad(tf.cast(x.flat_values, tf.int64), [[0, 1]])
                                      for x in (op_ids, op_starts, op_ends))
        last = tf.size(op_ids, out_type=tf.int64) - 1
        text = tf.gather(spelled, rows)
        text_length = tf.cast(tf.strings.length(text), tf.int64)

        def locate(keys, op_index, op_keys, op_offsets):
            """Offsets of piece boundaries `keys`, in or at the end of op piece `op_index`."""
            op_index = tf.clip_by_value(op_index, 0, last)
            piece, start, end, offset = (tf.gather(x, op_index)
                                         for x in (op_ids, op_starts, op_ends, op_offsets))
            # Within the text, should the two ops ever split it differently.
            end = tf.minimum(end, text_length)
            start = tf.minimum(start, end)
            count = tf.gather(self._char_counts, piece)
            within = tf.clip_by_value(keys - tf.gather(op_begin_keys, op_index), 0, count)
            first = tf.gather(self._byte_ends_splits, piece)
            into, length = (tf.gather(self._byte_ends, first + n) for n in (within, count))
            spelling = tf.gather(self._spellings, piece)
            in_text = tf.strings.substr(text, start, end - start)
            # `▁x` spelled as "x": the dummy prefix at the start of a text.
            after_prefix = (tf.strings.substr(spelling, 0, 1) == " ") & (
                in_text == tf.strings.substr(spelling, tf.ones_like(length), length - 1))
            counted = tf.where(in_text == spelling, start + into,
                               tf.where(after_prefix, tf.maximum(start + into - 1, start), offset))
            return tf.where(tf.gather(op_keys, op_index) == keys, offset, counted)

        starts = locate(begin_keys, tf.searchsorted(op_begin_keys[:-1], begin_keys,
                                                    side="right", out_type=tf.int64) - 1,
                        op_begin_keys, op_starts)
        ends = locate(end_keys, tf.searchsorted(op_end_keys[:-1], end_keys, side="left",
                                                out_type=tf.int64),
                      op_end_keys, op_ends)
        return starts, ends
