"""No preprocessing before the SentencePiece model (XLM-RoBERTa): the characters as they
are, in `AlbertPreprocessing`'s output format, so that both pipelines and their offsets
work unchanged."""

import tensorflow as tf

from keras_bert_core.text.tflite_tokenization import _shift


class RawText(tf.Module):
    """The identity on flat characters, with TFLite builtins. Called on `Characters`, it
    returns their code points, the character each comes from (itself) and their row
    splits; `with_spans` adds, per character, the byte offset in its text where it ends.

    Example:
    >>> from keras_bert_core.text.sentencepiece.characters import characters
    >>> chars = characters(tf.constant(["añ b", "c"]))
    >>> out_chars, sources, splits, ends = RawText()(chars, with_spans=True)
    >>> out_chars.numpy().tolist(), splits.numpy().tolist(), ends.numpy().tolist()
    ([97, 241, 32, 98, 99], [0, 4, 5], [1, 3, 4, 5, 1])
    """

    # What the TFLite route's offsets see of the text: every code point (no ALBERT table).
    albert_settings = None

    def __call__(self, chars, with_spans=False):
        outputs = (chars.code_points, tf.range(tf.size(chars.code_points)), chars.row_splits)
        if not with_spans:
            return outputs
        # A character ends where the next one of its text starts, the last at the text's end.
        last = _shift(chars.rows, 1, fill=-1) != chars.rows
        span_ends = tf.where(last, tf.gather(chars.text_lengths, chars.rows),
                             _shift(chars.starts, 1, fill=0))
        return (*outputs, span_ends)
