"""Byte-level BPE's pre-tokenization (GPT-2's regex) with RE2, which has no lookahead.

GPT-2 splits with
``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``.
RE2, the regex engine of TensorFlow, has no lookahead. ``\\s+(?!\\S)`` only matters in a
run of two or more whitespace characters followed by a non-space: the run less its last
character is one word, and the last character starts the next match (a space joins the
word after it: ``"  's"`` is ``" ", " '", "s"``). So a first split finds those runs and
cuts the text before their last character; the GPT-2 regex, with plain ``\\s+``, then
splits each piece. The character classes are written out so that RE2 matches what
``tokenizers`` (Oniguruma) matches: ``\\s`` is Unicode's White_Space, and letters and
digits assigned in Unicode 16, which RE2's tables lack, are listed. ASCII texts take the
same pattern with ASCII classes, which RE2 runs faster. tf.text's
split stops at a NUL byte, so it splits a copy where NUL reads as U+0001 (same class).
"""

import tensorflow as tf

from keras_bert_core import tensorflow_internals

# Whitespace as Oniguruma's \s in `tokenizers` (Unicode's White_Space property); RE2's \s
# is ASCII only.
_WHITESPACE = r"\t\n\x0b\f\r \x{85}\p{Z}"
# Letters and digits of Unicode 16 that RE2's tables in TensorFlow lack (found by comparing
# every code point with the reference; tests/text/byte_pair keeps that check).
_NEWER_LETTERS = (
    r"\x{1c89}-\x{1c8a}\x{a7cb}-\x{a7cd}\x{a7da}-\x{a7dc}\x{105c0}-\x{105f3}\x{10d4a}-\x{10d65}"
    r"\x{10d6f}-\x{10d85}\x{10ec2}-\x{10ec4}\x{11380}-\x{11389}\x{1138b}\x{1138e}"
    r"\x{11390}-\x{113b5}\x{113b7}\x{113d1}\x{113d3}\x{11bc0}-\x{11be0}\x{13460}-\x{143fa}"
    r"\x{16100}-\x{1611d}\x{16d40}-\x{16d6c}\x{18cff}\x{1e5d0}-\x{1e5ed}\x{1e5f0}"
    r"\x{2ebf0}-\x{2ee5d}"
)
_NEWER_NUMBERS = (
    r"\x{10d40}-\x{10d49}\x{116d0}-\x{116e3}\x{11bf0}-\x{11bf9}\x{16130}-\x{16139}"
    r"\x{16d70}-\x{16d79}\x{1ccf0}-\x{1ccf9}\x{1e5f1}-\x{1e5fa}"
)
_LETTER = r"\p{L}" + _NEWER_LETTERS
_NUMBER = r"\p{N}" + _NEWER_NUMBERS


def _pretoken_pattern(whitespace, letter, number):
    r"""GPT-2's pattern with `\s+(?!\S)|\s+` as `\s+`: pieces never hold the runs where they
    differ."""
    return (r"'s|'t|'re|'ve|'m|'ll|'d"
            rf"| ?[{letter}]+| ?[{number}]+| ?[^{whitespace}{letter}{number}]+|[{whitespace}]+")


GPT2_PRETOKEN_PATTERN = _pretoken_pattern(_WHITESPACE, _LETTER, _NUMBER)
# The same on ASCII text, which RE2 runs faster: tf.text's split asks RE2 for a submatch,
# whose cost grows with the size of the compiled pattern (large Unicode classes).
ASCII_PRETOKEN_PATTERN = _pretoken_pattern(r"\t\n\x0b\f\r ", "a-zA-Z", "0-9")
ASCII_TEXT = r"[\x00-\x7f]*"
# Runs where `\s+(?!\S)` gives back the last character.
_WHITESPACE_RUN = rf"[{_WHITESPACE}]{{2,}}"


def pretokenize(text, pattern):
    """Byte starts and ends (ragged [batch, (words)], int64) of the words of GPT-2's
    pre-tokenization, whose pattern (less the lookahead) is `pattern`."""
    # tf.text's regex split stops at a NUL byte: split a copy where NUL is U+0001, which
    # every class treats alike (the words' bytes come from the input).
    text = tf.strings.regex_replace(text, r"\x00", "\x01")
    # Runs of 2+ whitespace characters, and the pieces between them (alternately).
    pieces, starts, _ = tensorflow_internals.regex_split_with_offsets(
        text, _WHITESPACE_RUN, _WHITESPACE_RUN)
    flat = pieces.flat_values
    is_run = tf.strings.regex_full_match(flat, _WHITESPACE_RUN)
    rows = pieces.value_rowids()
    followed = tf.concat([rows[1:] == rows[:-1], [False]], 0)
    # A run that a piece follows gives its last character to that piece.
    gives = is_run & followed
    given = tf.where(gives)
    last_char = tf.strings.substr(tf.gather_nd(flat, given), -1, 1, unit="UTF8_CHAR")
    last_char = tf.scatter_nd(given, last_char, tf.shape(flat, out_type=tf.int64))
    prefix = tf.concat([[""], last_char], 0)[:-1]  # no pieces at all: none
    kept = tf.strings.length(flat) - tf.strings.length(last_char)
    pieces = tf.strings.join([prefix, tf.strings.substr(flat, tf.zeros_like(kept), kept)])
    piece_starts = starts.flat_values - tf.cast(tf.strings.length(prefix), tf.int64)
    _, word_starts, word_ends = tensorflow_internals.regex_split_with_offsets(
        pieces, pattern, pattern)
    # Each word's piece, for the shift to its text's bytes (a gather: adding a [pieces, 1]
    # tensor to the ragged offsets would trace ragged broadcasting's many shape ops).
    shift = tf.gather(piece_starts, word_starts.value_rowids())
    words_by_text = tf.gather(word_starts.row_splits, starts.row_splits)

    def by_text(offsets_in_pieces):
        return tf.RaggedTensor.from_row_splits(offsets_in_pieces.flat_values + shift,
                                               words_by_text, validate=False)

    return by_text(word_starts), by_text(word_ends)
