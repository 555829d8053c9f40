"""Texts as flat characters and back: UTF-8 decoded with TensorFlow core ops or with TFLite
builtins, and preprocessed code points spelled as strings either way."""

import tensorflow as tf

from keras_bert_core.text.fast_wordpiece import fast_wordpiece
from keras_bert_core.text.tflite_tokenization import _positions, _shift, _utf8_bytes, row_ids

REPLACEMENT_CHAR = 0xFFFD


class Characters:
    """The characters of a batch of texts, flat, in row order (int32 [chars] each): code
    point (U+FFFD for invalid bytes), row and byte start in its text, with the row splits
    [rows + 1] and each text's length in bytes [rows]."""

    def __init__(self, code_points, rows, starts, row_splits, text_lengths):
        self.code_points, self.rows, self.starts = code_points, rows, starts
        self.row_splits, self.text_lengths = row_splits, text_lengths


def characters(text):
    """The characters of `text` with TensorFlow core ops."""
    code_points, starts = tf.strings.unicode_decode_with_offsets(
        text, "UTF-8", errors="replace", replacement_char=REPLACEMENT_CHAR)
    return Characters(code_points.flat_values, tf.cast(code_points.value_rowids(), tf.int32),
                       tf.cast(starts.flat_values, tf.int32),
                       tf.cast(code_points.row_splits, tf.int32), tf.strings.length(text))


def tflite_characters(text, max_bytes=None):
    """The characters of `text` with TFLite builtins (and tf.text's byte split): every
    valid UTF-8 character, and every byte that is in none as a U+FFFD. With `max_bytes`,
    of what `cut_texts` keeps of each text."""
    code_points, lengths, byte_rows, _, byte_splits = _utf8_bytes(text, max_bytes)
    covered = tf.zeros_like(lengths, tf.bool)
    for k in (1, 2, 3):  # inside a valid character that starts k bytes before
        covered |= _shift(lengths, -k, fill=0) > k
    starts_char = (lengths > 0) | ~covered
    positions = _positions(starts_char)
    valid = tf.gather(lengths, positions) > 0
    row_starts = tf.gather(byte_splits, tf.gather(byte_rows, positions))
    chars_before = tf.pad(tf.cumsum(tf.cast(starts_char, tf.int32)), [[1, 0]])
    return Characters(
        tf.where(valid, tf.gather(code_points, positions), REPLACEMENT_CHAR),
        tf.gather(byte_rows, positions), positions - row_starts,
        tf.gather(chars_before, byte_splits), byte_splits[1:] - byte_splits[:-1])


def spell(out_chars, out_splits):
    """The preprocessed texts as strings (TensorFlow core ops)."""
    return tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(out_chars, out_splits, validate=False), "UTF-8")


def utf8_lengths(code_points):
    return (1 + tf.cast(code_points >= 0x80, tf.int32) + tf.cast(code_points >= 0x800, tf.int32)
            + tf.cast(code_points >= 0x10000, tf.int32))


class ByteSpeller(tf.Module):
    """Spells flat code points as UTF-8 strings with TFLite builtins and tf.text's
    `FastWordpieceDetokenize`: byte b is token b - 1 at the start of a text and "##" + b
    (token 254 + b) after it. NUL, which no token can hold, is spelled as `nul_stand_in`."""

    def __init__(self, nul_stand_in):
        super().__init__()
        self.nul_stand_in = nul_stand_in
        tokens = ([bytes([b]) for b in range(1, 256)] + [b"##" + bytes([b]) for b in range(1, 256)]
                  + [b"[UNK]"])
        self._detokenizer = fast_wordpiece(
            tokens, support_detokenization=True, no_pretokenization=True)

    def __call__(self, code_points, row_splits):
        code_points = tf.where(code_points == 0, self.nul_stand_in, code_points)
        lengths = utf8_lengths(code_points)
        byte_splits = tf.pad(tf.cumsum(lengths), [[1, 0]])
        owner = row_ids(byte_splits)
        within = tf.range(tf.size(owner)) - tf.gather(byte_splits, owner)
        code_point, length = tf.gather(code_points, owner), tf.gather(lengths, owner)
        # The bits of a character's byte: 6 per following byte; lead bytes add a prefix.
        payload = code_point // tf.gather([1, 64, 4096, 262144], length - 1 - within)
        byte = tf.where(within == 0, tf.gather([0, 0, 0xC0, 0xE0, 0xF0], length) + payload,
                        0x80 + payload % 64)
        text_splits = tf.gather(byte_splits, row_splits)
        rows = row_ids(text_splits)
        starts_text = _shift(rows, -1, fill=-1) != rows
        tokens = tf.where(starts_text, byte - 1, 254 + byte)
        return self._detokenizer.detokenize(tf.RaggedTensor.from_row_splits(
            tokens, tf.cast(text_splits, tf.int64), validate=False))
