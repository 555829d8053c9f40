"""Byte offsets of the pieces with TFLite builtins: the model's normalizer and pieces replayed
on character counts (the TFLite-compatible pipeline; `SentencepieceTokenizeWithOffsetsOp` has
no TFLite kernel)."""

import tensorflow as tf

from keras_bert_core.text.character_table import BLOCK_SIZE
from keras_bert_core.text.sentencepiece.albert_preprocessing import SPACE_CHAR
from keras_bert_core.text.sentencepiece.normalizer_tables import (
    CODE_POINT_RANGE,
    SPACE_BIT,
    UNKNOWN_BIT,
    normalizer_tables,
)
from keras_bert_core.text.sentencepiece.offsets import input_span
from keras_bert_core.text.tflite_tokenization import _positions, _shift, row_ids


class TfliteOffsets(tf.Module):
    """Byte offsets of the fast op's pieces in the input texts, with TFLite builtins: the
    model's normalizer and the unigram model's pieces replayed on character counts.

    The normalizer (sentencepiece's `normalizer.cc`) cuts the preprocessed text into units,
    each the longest rule that starts there (or one character), and writes each unit's
    output; every output character points at its unit's first character. Its whitespace
    rules then drop a space after a space or at the start (after the dummy prefix `▁`,
    which points at the first unit that is not a lone space) and a space at the end (the
    text then ends where that space's unit starts). The pieces cover the normalized text in
    order: a piece its own characters, an unknown piece a run of characters that are no
    pieces (every other character is one: `normalizer_tables` checks the model). So a
    piece's first and last characters, counted, give the units it starts and ends in, as
    sentencepiece's own offsets do; the preprocessing's spans then give input bytes.
    """

    def __init__(self, model, albert_settings, nul_stand_in):
        super().__init__()
        tables = normalizer_tables(model, albert_settings, nul_stand_in)
        self._nul_stand_in = nul_stand_in
        self._block_of = tf.constant(tables["block_of"])
        self._entries = tf.constant(tables["entries"])
        self._num_spellings = tables["num_spellings"]
        splits = tables["spelling_splits"]
        self._spelling_splits = tf.constant(splits)
        self._spelling_lengths = tf.constant(splits[1:] - splits[:-1])
        self._spelling_values = tf.constant(tables["spelling_values"])
        self._space_spelling = tables["space_spelling"]
        self._space_unknown = tables["space_unknown"]
        self._levels = [(tf.constant(keys), tf.constant(rule)) for keys, rule in tables["levels"]]
        self._piece_lengths = tf.constant(tables["piece_lengths"])

    def __call__(self, chars, out_chars, sources, out_splits, span_ends, ids):
        """Flat int64 `(starts, ends)` of the pieces `ids` (ragged [batch, (pieces)]) in the
        input texts, from the preprocessing's outputs (`AlbertPreprocessing(chars,
        with_spans=True)` or `RawText`'s)."""
        size = tf.size(out_chars)
        rows = row_ids(out_splits)
        row_end = tf.gather(out_splits, rows + 1)
        code_points = tf.where(out_chars == 0, self._nul_stand_in, out_chars)
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // BLOCK_SIZE)
                          * BLOCK_SIZE + code_points % BLOCK_SIZE)
        spelling, unit_length = self._units(code_points, entry, row_end)
        unit_start = self._unit_starts(unit_length)

        # The normalized characters, each with its unit's first character.
        counts = tf.where(unit_start, tf.gather(self._spelling_lengths, spelling), 0)
        splits = tf.pad(tf.cumsum(counts), [[1, 0]])
        unit = row_ids(splits)
        within = tf.range(tf.size(unit)) - tf.gather(splits, unit)
        classes = tf.gather(self._spelling_values, tf.gather(
            self._spelling_splits, tf.gather(spelling, unit)) + within)
        normalized_splits = tf.gather(splits, out_splits)
        normalized_rows = row_ids(normalized_splits)

        # The dummy prefix points at the first unit that is not a lone space.
        not_space_unit = unit_start & (spelling != self._space_spelling)
        before = tf.pad(tf.cumsum(tf.cast(not_space_unit, tf.int32)), [[1, 0]])
        first_unit = tf.gather(tf.pad(_positions(not_space_unit), [[0, 1]],
                                      constant_values=size), tf.gather(before, out_splits[:-1]))
        dummy = tf.minimum(first_unit, out_splits[1:])

        # Whitespace: no space at the start (after the dummy prefix) or after a space.
        space = classes % 2 == SPACE_BIT
        starts_row = tf.range(tf.size(unit)) == tf.gather(normalized_splits, normalized_rows)
        kept = ~(space & (_shift(space, -1, fill=True) | starts_row))
        kept_before = tf.pad(tf.cumsum(tf.cast(kept, tf.int32)), [[1, 0]])
        kept_splits = tf.gather(kept_before, normalized_splits)
        kept_positions = _positions(kept)
        kept_rows = tf.gather(normalized_rows, kept_positions)
        last = tf.gather(tf.pad(kept_positions, [[0, 1]]), tf.maximum(kept_splits[1:] - 1, 0))
        # ... nor at the end: the text then ends where that space's unit starts.
        trimmed = (kept_splits[1:] > kept_splits[:-1]) & tf.gather(
            tf.pad(space, [[0, 1]]), last)
        text_end = tf.where(trimmed, tf.gather(tf.pad(unit, [[0, 1]]), last), out_splits[1:])
        kept_index = tf.range(tf.size(kept_positions))
        included = ~(tf.gather(trimmed, kept_rows)
                     & (kept_index == tf.gather(kept_splits[1:], kept_rows) - 1))

        # A run of unknown characters is one piece (the dummy prefix may start it).
        unknown = tf.gather(classes, kept_positions) // UNKNOWN_BIT > 0
        dummy_unknown = tf.constant(self._space_unknown)
        starts_kept_row = kept_index == tf.gather(kept_splits, kept_rows)
        after_unknown = tf.where(starts_kept_row, dummy_unknown,
                                 _shift(unknown, -1, fill=False))
        counted = included & ~(unknown & after_unknown)
        counted_before = tf.pad(tf.cumsum(tf.cast(counted, tf.int32)), [[1, 0]])
        counted_splits = tf.gather(counted_before, kept_splits)
        counted_units = tf.pad(tf.gather(unit, tf.gather(kept_positions, _positions(counted))),
                               [[0, 1]])

        # Pieces: counted characters from the start of their row (0: the dummy prefix).
        piece_splits = tf.cast(ids.row_splits, tf.int32)
        lengths = tf.gather(self._piece_lengths, ids.flat_values)
        piece_rows = row_ids(piece_splits)
        ends = tf.cumsum(lengths)
        ends -= tf.gather(tf.pad(ends, [[1, 0]]), tf.gather(piece_splits, piece_rows))
        row_counted = tf.gather(counted_splits, piece_rows)
        row_count = tf.gather(counted_splits, piece_rows + 1) - row_counted

        def unit_at(counted_index):
            """The unit (preprocessed character) that a count from the row start reaches."""
            inside = tf.gather(counted_units, tf.clip_by_value(
                row_counted + counted_index - 1, 0, tf.size(counted_units) - 1))
            return tf.where(counted_index == 0, tf.gather(dummy, piece_rows),
                            tf.where(counted_index <= row_count, inside,
                                     tf.gather(text_end, piece_rows)))

        begin, end = unit_at(ends - lengths), unit_at(ends)
        # A word's first piece starts at the word, not at the space before it.
        padded_chars = tf.pad(out_chars, [[0, 1]])
        begin += tf.cast((begin < end) & (tf.gather(padded_chars, begin) == SPACE_CHAR),
                         tf.int32)
        # Preprocessed characters -> input bytes: the input character each comes from.
        padded_sources = tf.pad(sources, [[0, 1]])
        return input_span(chars, span_ends,
                           lambda char: tf.gather(padded_sources, tf.maximum(char, 0)),
                           begin, end, tf.gather(out_splits, piece_rows + 1))

    def _units(self, code_points, entry, row_end):
        """Each character's spelling and length as a unit: its own, or those of the longest
        rule of several characters that starts there (searched where a rule may start)."""
        spelling = entry % self._num_spellings
        length = tf.ones_like(code_points)
        if not self._levels:
            return spelling, length
        candidates = _positions(entry // self._num_spellings > 0)

        def longest_rules():
            rule_spelling = tf.gather(spelling, candidates)
            rule_length = tf.ones_like(candidates)
            prefix = tf.cast(tf.gather(entry // self._num_spellings, candidates) - 1, tf.int64)
            alive = tf.ones_like(candidates, tf.bool)
            last = tf.maximum(tf.size(code_points) - 1, 0)
            for length_so_far, (keys, rules) in enumerate(self._levels, start=2):
                position = candidates + length_so_far - 1
                alive &= position < tf.gather(row_end, candidates)
                value = prefix * CODE_POINT_RANGE + tf.cast(
                    tf.gather(code_points, tf.minimum(position, last)), tf.int64)
                index = _sorted_index(keys, value)
                alive &= tf.gather(keys, index) == value
                rule = tf.gather(rules, index)
                completes = alive & (rule >= 0)
                rule_length = tf.where(completes, length_so_far, rule_length)
                rule_spelling = tf.where(completes, rule, rule_spelling)
                prefix = tf.cast(index, tf.int64)
            size = tf.size(code_points)
            return (spelling + tf.math.unsorted_segment_sum(
                        rule_spelling - tf.gather(spelling, candidates), candidates, size),
                    length + tf.math.unsorted_segment_sum(rule_length - 1, candidates, size))

        # Most texts have no character that starts such a rule: no search (TFLite's IF).
        return tf.cond(tf.size(candidates) > 0, longest_rules, lambda: (spelling, length))

    def _unit_starts(self, unit_length):
        """Where the normalizer's units start: greedily from each row's start, a unit as
        long as the longest rule there. A character that no earlier rule could cover starts
        one; from those, the chains of units are followed by pointer doubling."""
        if not self._levels:
            return tf.ones_like(unit_length, tf.bool)
        size = tf.size(unit_length)
        following = tf.range(size) + unit_length
        covered = tf.zeros_like(unit_length, tf.bool)
        for back in range(1, len(self._levels) + 1):  # rules of up to len + 1 characters
            covered |= _shift(following, -back, fill=0) > tf.range(size)

        def step(starts, jump, changed):
            landed = tf.math.unsorted_segment_sum(tf.cast(starts, tf.int32), jump, size + 1) > 0
            grown = starts | landed
            changed = tf.reduce_any(grown & ~starts)
            return grown, tf.gather(jump, jump), changed

        starts, _, _ = tf.while_loop(
            lambda starts, jump, changed: changed, step,
            (tf.pad(~covered, [[0, 1]], constant_values=True), tf.pad(following, [[0, 1]],
                                                                       constant_values=size),
             tf.constant(True)))
        return tf.slice(starts, [0], [size])


def _sorted_index(keys, values):
    """For each of `values`, the index of the last of the sorted `keys` not above it (0 if
    none): a binary search in gathers (TFLite has no searchsorted)."""
    count = int(keys.shape[0])
    index = tf.zeros_like(values, tf.int32)
    step = 1 << max(count - 1, 0).bit_length()
    while step:
        probe = index + step
        fits = (probe < count) & (tf.gather(keys, tf.minimum(probe, count - 1)) <= values)
        index = tf.where(fits, probe, index)
        step //= 2
    return index
