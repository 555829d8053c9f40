"""The TFLite-compatible tokenization pipeline: the reference pipeline's ids and offsets from
TFLite builtin ops plus three tf.text ops that tf.text's TFLite registrar resolves
(`ByteSplitWithOffsets`, `FastWordpieceDetokenize`, `FastWordpieceTokenize`)."""

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_core.text import character_table
from keras_bert_core.text.character_normalization import (
    ISOLATED_CHAR,
    MAX_CHARS_PER_WORD,
    REMOVED_CHAR,
    WHITESPACE_CHAR,
)
from keras_bert_core.text.fast_wordpiece import fast_wordpiece

_BLOCK = character_table.BLOCK_SIZE


class TfliteWordpieces(tf.Module):
    """`BertTokenizer(tflite_compatible=True)`'s pipeline: the vocabulary's normalization
    table and speller, built once; called on a 1-D string tensor, it returns ragged ids
    (and byte offsets) as the default pipeline gives them.

    Args:
        vocabulary: the list of tokens.
        lower_case: bool.
        word_wordpiece: the `FastWordpieceTokenizer` of single normalized words.
        max_text_bytes: tokenize only this many first bytes of each row, or None.
    """

    def __init__(self, vocabulary, lower_case, word_wordpiece, max_text_bytes):
        super().__init__()
        block_of, entries, spellings, alphabet = character_table.vocabulary_table(
            vocabulary, lower_case)
        self._block_of = tf.constant(block_of)
        self._entries = tf.constant(entries)
        self._spellings = tf.constant(spellings)
        self._alphabet_bytes = tf.constant([len(c.encode("utf-8")) for c in alphabet])
        # Alphabet character i is token 2i at the start of a word and 2i + 1 after:
        # detokenizing a word's characters spells the word.
        self._speller = fast_wordpiece(
            [token for c in alphabet for token in (c, "##" + c)] + ["[UNK]"],
            support_detokenization=True,
        )
        self._word_wordpiece = word_wordpiece
        self._max_text_bytes = max_text_bytes

    def __call__(self, text, with_offsets):
        """The reference pipeline in TFLite builtin ops plus three tf.text ops that tf.text's
        TFLite registrar resolves: decode UTF-8 by arithmetic on the bytes, look each
        character up in the normalization table, spell the words with
        `FastWordpieceDetokenize`, cut them with `FastWordpieceTokenize`. Flat int32 index
        arithmetic only (no ragged gathers, no string ops); few `Where`, no strided slices
        over the text (TFLite's kernels for both are slow)."""
        code_points, lengths, byte_rows, row_starts, byte_splits = _utf8_bytes(
            text, self._max_text_bytes)
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // _BLOCK)
                          * _BLOCK + code_points % _BLOCK)
        kinds = tf.where(lengths > 0, entry % 4, REMOVED_CHAR)
        # A whitespace character or the start of a row separates words; removed characters
        # (and invalid bytes) do not.
        separators = tf.cumsum(tf.cast((kinds == WHITESPACE_CHAR) | row_starts, tf.int32))
        in_word = kinds >= ISOLATED_CHAR
        chars = _positions(in_word)  # the input bytes where word characters start
        separators = tf.gather(separators, chars)
        isolated = tf.gather(kinds, chars) == ISOLATED_CHAR
        begins_word = (separators != _shift(separators, -1, fill=-1)) | isolated | _shift(
            isolated, -1, fill=False)
        words_so_far = tf.cumsum(tf.cast(begins_word, tf.int32))
        # Each character's normalized characters, as alphabet indices (+1, 0 for none).
        width = self._spellings.shape[1]
        spelled = tf.gather(self._spellings, tf.gather(entry // 4, chars))
        letters_before = tf.cumsum(tf.reduce_sum(tf.cast(spelled > 0, tf.int32), 1),
                                   exclusive=True)
        spelled = tf.reshape(spelled, [-1])
        present = _positions(spelled > 0)
        char_of = present // width
        letters = tf.gather(spelled, present) - 1
        word_starts = tf.concat(
            [tf.gather(letters_before, _positions(begins_word)), tf.shape(letters)], 0)
        word_of_letter = tf.gather(words_so_far, char_of) - 1
        # Over-long words: spelled with the placeholder (index 0), they become [UNK].
        too_long = _shift(word_starts, 1, fill=0) - word_starts > MAX_CHARS_PER_WORD
        letters = tf.where(tf.gather(too_long, word_of_letter), 0, letters)
        first = (present % width == 0) & tf.gather(begins_word, char_of)
        words = self._speller.detokenize(tf.RaggedTensor.from_row_splits(
            2 * letters + 1 - tf.cast(first, tf.int32), tf.cast(word_starts, tf.int64),
            validate=False))
        pieces, starts, ends = self._word_wordpiece.tokenize_with_offsets(words)
        # Rows of pieces: the words before each row's first byte.
        chars_before = tf.gather(tf.pad(tf.cumsum(tf.cast(in_word, tf.int32)), [[1, 0]]),
                                 byte_splits)
        words_before = tf.gather(tf.pad(words_so_far, [[1, 0]]), chars_before)
        row_splits = tf.gather(pieces.row_splits, words_before)

        def by_row(values):
            return tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)

        if not with_offsets:
            return (by_row(pieces.flat_values),)
        # Piece offsets count bytes of the spelled words: find the letters they fall in, then
        # the input characters those come from.
        letter_splits = tf.pad(tf.cumsum(tf.gather(self._alphabet_bytes, letters)), [[1, 0]])
        letter_at_byte = row_ids(letter_splits)
        base = tf.gather(letter_splits, tf.gather(word_starts, row_ids(pieces.row_splits)))

        def input_byte(letter_byte):
            return tf.gather(chars, tf.gather(char_of, tf.gather(letter_at_byte, letter_byte)))

        first_byte = input_byte(base + tf.cast(starts.flat_values, tf.int32))
        last_byte = input_byte(base + tf.cast(ends.flat_values, tf.int32) - 1)
        row_base = tf.gather(byte_splits, tf.gather(byte_rows, first_byte))
        starts = tf.cast(first_byte - row_base, tf.int64)
        ends = tf.cast(last_byte + tf.gather(lengths, last_byte) - row_base, tf.int64)
        return by_row(pieces.flat_values), by_row(starts), by_row(ends)


def _cut_character_bytes(byte, row_splits, max_bytes):
    """Per row, how many bytes before `max_bytes` belong to the character that a cut there
    splits (0 where none is split, or the row is not that long): `cut_texts`'s rule, the
    continuation bytes that end at the first byte cut off, in builtin gathers."""
    lengths = row_splits[1:] - row_splits[:-1]
    cut = lengths > max_bytes
    # Something to gather from when every row is empty (CONCATENATION takes uint8; PAD
    # does not).
    padded = tf.concat([byte, tf.zeros([1], byte.dtype)], axis=0)
    back = tf.zeros_like(lengths)
    run = cut
    for k in range(4):  # the first byte cut off and the three before it
        at = tf.cast(tf.gather(padded, tf.where(cut, row_splits[:-1] + max_bytes - k, 0)),
                     tf.int32)
        run &= (at >= 0x80) & (at < 0xC0)
        back += tf.cast(run, tf.int32)
    return back


def _utf8_bytes(text, max_bytes=None):
    """Decodes UTF-8 with builtin arithmetic on the bytes (TFLite has no Unicode ops).

    With `max_bytes`, only the bytes of each row that `cut_texts` keeps are kept: its first
    `max_bytes` bytes, less the first bytes of a character cut there; the values returned
    below are those of the kept bytes, and positions in a row are still those of its text.

    Returns, per byte of `text` (flat), the code point of the character starting there and
    its length in bytes (0 where no valid character starts: continuation and invalid bytes;
    the reference reads invalid ones as U+FFFD, which it removes, and a valid character
    never starts inside an invalid run), then each byte's row, whether it starts its row, and
    the row splits; int32."""
    split = tf_text.ByteSplitter().split(text)
    row_splits = tf.cast(split.row_splits, tf.int32)
    byte = split.flat_values
    if max_bytes is not None:
        # The kept bytes' own row splits, then each kept byte's index among all bytes: its
        # position in the kept rows plus how many bytes earlier rows lost. Only tensors of
        # the kept bytes' size are made (no mask over all bytes).
        kept = tf.minimum(row_splits[1:] - row_splits[:-1],
                          max_bytes - _cut_character_bytes(byte, row_splits, max_bytes))
        kept_splits = tf.pad(tf.cumsum(kept), [[1, 0]])
        lost = row_splits - kept_splits
        byte = tf.gather(byte, tf.range(kept_splits[-1]) + tf.gather(lost, row_ids(
            kept_splits)))
        row_splits = kept_splits
    byte = tf.cast(byte, tf.int32)
    rows = row_ids(row_splits)
    row_starts = rows != _shift(rows, -1, fill=-1)
    # A row's first byte continues no character of the row before.
    following = [_shift(tf.where(row_starts, 0, byte), k, fill=0) for k in (1, 2, 3)]
    length, low, high = (tf.gather(table, byte) for table in _UTF8_LEADS)
    valid = (length > 0) & ((length < 2) | ((following[0] >= low) & (following[0] <= high)))
    for k in (2, 3):
        valid &= (length <= k) | ((following[k - 1] >= 0x80) & (following[k - 1] < 0xC0))
    code_point = byte - tf.gather([0, 0, 0xC0, 0xE0, 0xF0], length)
    for k, next_byte in enumerate(following, start=2):
        code_point = tf.where(length >= k, code_point * 64 + next_byte - 0x80, code_point)
    return tf.where(valid, code_point, 0), tf.where(valid, length, 0), rows, row_starts, row_splits


def _utf8_leads():
    """Per byte value: the length of the character it starts (0: none) and the range of the
    byte after it (narrower after E0, ED, F0 and F4: no overlong forms, no surrogates,
    nothing past U+10FFFF)."""
    lengths = [1] * 0x80 + [0] * 0x42 + [2] * 0x1E + [3] * 0x10 + [4] * 5 + [0] * 11
    lows = [{0xE0: 0xA0, 0xF0: 0x90}.get(byte, 0x80) for byte in range(256)]
    highs = [{0xED: 0x9F, 0xF4: 0x8F}.get(byte, 0xBF) for byte in range(256)]
    return lengths, lows, highs


_UTF8_LEADS = _utf8_leads()


def _shift(values, offset, fill):
    """`values[i + offset]` at each `i` of a 1-D tensor, `fill` past its ends (`tf.slice`:
    TFLite's strided slice is slow)."""
    padding = [[0, offset]] if offset > 0 else [[-offset, 0]]
    padded = tf.pad(values, padding, constant_values=fill)
    return tf.slice(padded, [max(offset, 0)], tf.shape(values))


def _positions(mask):
    """Indices (int32) of the true values of a 1-D mask."""
    return tf.reshape(tf.cast(tf.where(mask), tf.int32), [-1])


def _count_at(positions, size):
    """How many of `positions` equal each of `0 .. size - 1` (builtin ops: TFLite has them)."""
    capped = tf.cast(tf.minimum(positions, size), tf.int32)  # `size` is counted, then cut
    counts = tf.math.unsorted_segment_sum(
        tf.ones_like(capped), capped, tf.cast(size, tf.int32) + 1)
    return tf.cast(tf.slice(counts, [0], [tf.cast(size, tf.int32)]), positions.dtype)


def row_ids(row_splits):
    """Row of each value: `RaggedTensor.value_rowids` without its [rows, longest row] mask
    or `RaggedRange` (TFLite has neither)."""
    # Each row start (after the first) adds one; an empty row shares its start with the next.
    return tf.cumsum(_count_at(row_splits[1:-1], row_splits[-1]))
