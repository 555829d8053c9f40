"""Hugging Face's non-special added tokens (ModernBERT's runs of 2 to 24 spaces and its
`|||EMAIL_ADDRESS|||` placeholders) taken out of the text before byte-level BPE, as
`tokenizers` takes them: found leftmost-longest, each becomes its own id, and the text
between them is pre-tokenized and merged piece by piece."""

import tensorflow as tf

from keras_bert_core import tensorflow_internals


def added_token_pattern(tokens):
    r"""An RE2 pattern that finds `tokens` as `tokenizers`' leftmost-longest matcher does:
    RE2 takes the first alternative that matches at the leftmost place, so the longest come
    first. Every character but ASCII letters and digits is written `\x{...}`.

    Example:
    >>> added_token_pattern(["  ", "   ", "|a|"])
    '\\x{20}\\x{20}\\x{20}|\\x{7c}a\\x{7c}|\\x{20}\\x{20}'
    """
    def escape(token):
        return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}"
                       for c in token)

    return "|".join(escape(t) for t in sorted(tokens, key=len, reverse=True))


def split_added_tokens(text, pattern):
    """The pieces of each text (ragged [batch, (pieces)] strings, byte starts and ends):
    the added tokens `pattern` finds and the text between them; and, for the flat pieces,
    whether each is an added token."""
    # tf.text's regex split stops at a NUL byte: split a copy where NUL reads as U+0001.
    searched = tf.strings.regex_replace(text, r"\x00", "\x01")
    _, starts, ends = tensorflow_internals.regex_split_with_offsets(
        searched, pattern, pattern)
    # The pieces' bytes from the input itself (a NUL stays a NUL).
    pieces = tf.strings.substr(tf.gather(text, starts.value_rowids()), starts.flat_values,
                               ends.flat_values - starts.flat_values)
    is_added = tf.strings.regex_full_match(
        tf.strings.regex_replace(pieces, r"\x00", "\x01"), pattern)
    return starts.with_flat_values(pieces), starts, ends, is_added
