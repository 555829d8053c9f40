"""Unicode normalization before byte-level BPE (ModernBERT's `NFC` normalizer), with the
offsets of tokens in the normalized text mapped back to the input's bytes.

tf.text normalizes with ICU, whose Unicode tables are newer than those of `tokenizers`
(`unicode-normalization-alignments`): a stack of combining marks that holds marks assigned in
recent Unicode versions (e.g. U+1AC1 to U+1ACE, Unicode 14) can be reordered by one and not
the other; texts without such stacks are normalized alike.
"""

import tensorflow as tf
import tensorflow_text as tf_text


def normalize(text, form, with_offsets):
    """`text` in normalization `form` ("NFC"), and, `with_offsets`, the map of its offsets
    back to the input's (else None).

    Example:
    >>> texts, offsets_map = normalize(tf.constant(["Cafe\\u0301!"]), "NFC", True)
    >>> texts.numpy()[0].decode(), source_offsets(
    ...     offsets_map, tf.ragged.constant([[3, 5]], tf.int64)).to_list()
    ('Café!', [[3, 6]])
    """
    if with_offsets:
        return tf_text.normalize_utf8_with_offsets_map(text, form)
    return tf_text.normalize_utf8(text, form), None


def source_offsets(offsets_map, offsets):
    """Byte offsets (ragged [batch, (tokens)], int64) in the normalized texts mapped to the
    input's. tf.text's FindSourceOffsets miscounts the rows of a batch that ends with empty
    ones: every row gets one more offset, dropped after."""
    one_more = tf.RaggedTensor.from_row_lengths(
        tf.zeros_like(offsets.row_lengths()), tf.ones_like(offsets.row_lengths()))
    mapped = tf_text.find_source_offsets(offsets_map, tf.concat([offsets, one_more], axis=1))
    return mapped[:, :-1]
