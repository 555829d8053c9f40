"""A pretraining corpus on disk: google-research's text format (UTF-8, one sentence per
line, a blank line between documents), read lazily as documents (its files are checked by
`text.corpus_files`)."""

import tensorflow as tf


def read_documents(path, block_lines=4096):
    """A dataset of one file's documents, each a 1-D string tensor of its sentences.

    Lines are read in blocks; the unfinished document at the end of a block is carried to
    the next, so memory holds one block plus one document.
    """

    def split_block(carry, block):
        lines = tf.concat([carry, block], axis=0)
        blank = tf.strings.length(tf.strings.strip(lines)) == 0
        # Lines up to the last blank line form whole documents.
        num_done = tf.reduce_max(tf.where(blank, tf.range(1, tf.size(lines) + 1), 0))
        done_blank = blank[:num_done]
        kept = ~done_blank
        docs = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(lines[:num_done], kept),
            tf.boolean_mask(tf.cumsum(tf.cast(done_blank, tf.int64)), kept),
            nrows=tf.reduce_sum(tf.cast(done_blank, tf.int64)),
        )
        return lines[num_done:], tf.ragged.boolean_mask(docs, docs.row_lengths() > 0)

    # A final blank line closes the last document.
    lines = tf.data.TextLineDataset(path).concatenate(tf.data.Dataset.from_tensors(""))
    return lines.batch(block_lines).scan(tf.constant([], tf.string), split_block).unbatch()
