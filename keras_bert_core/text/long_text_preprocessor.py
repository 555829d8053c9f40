"""`LongTextPreprocessor`: a text of any length as overlapping windows of `seq_length`."""

import keras
import tensorflow as tf

from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.string_batches import cut_texts
from keras_bert_core.text.windows import check_window_options, pack_windows


@keras.saving.register_keras_serializable(package="keras_bert_core")
class LongTextPreprocessor(BertPreprocessor):
    """Tokenizes each text whole and packs it as overlapping windows of `seq_length`.

    Window `k` of a text holds its wordpieces from `k * stride` on, `[CLS] pieces [SEP]`;
    a text has one window up to `seq_length - 2` pieces, and one more per `stride` pieces
    past it, at most `max_windows` (the pieces past them are cut, as `max_text_bytes`
    cuts bytes). A short text is exactly `BertPreprocessor`'s row, as one window. The
    windows are made in the graph (TensorFlow core ops: `text.windows`), so a model that
    carries this preprocessor takes one long raw text in both exports. Single texts only.

    Args:
        vocabulary: as for `BertPreprocessor`.
        seq_length: the window's length, special tokens included.
        stride: wordpieces between the starts of a text's windows, 1 to `seq_length - 2`;
            None: half a window.
        max_windows: the most windows of a text.
        **kwargs: `BertPreprocessor`'s other arguments.

    Call arguments:
        inputs: a string or a 1-D batch of strings.
        static_shape: True: `[batch, max_windows, seq_length]` (training); False: as many
            windows as the batch's longest text has, as wide as its longest window (a
            multiple of 8). None: the constructor's `static_shape`.

    Returns:
        dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, windows, width]`
        (`[windows, width]` for one string); a text's missing windows are all padding.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e"]
    >>> pre = LongTextPreprocessor(vocab, seq_length=5, stride=2, max_windows=4,
    ...                            static_shape=False)
    >>> pre(["a b c d e", "a"])["token_ids"].numpy().tolist()
    [[[2, 5, 6, 7, 3], [2, 7, 8, 9, 3]], [[2, 5, 3, 0, 0], [0, 0, 0, 0, 0]]]
    """

    def __init__(self, vocabulary, seq_length=128, stride=None, max_windows=16, **kwargs):
        super().__init__(vocabulary, seq_length=seq_length, **kwargs)
        self.stride = max((self.seq_length - 2) // 2, 1) if stride is None else stride
        self.max_windows = max_windows
        check_window_options(self.seq_length, self.stride, self.max_windows)

    @classmethod
    def from_preprocessor(cls, preprocessor, stride=None, max_windows=16):
        """The long-text twin of a `BertPreprocessor`: its vocabulary and settings, in
        windows.

        >>> pre = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"], 8)
        >>> LongTextPreprocessor.from_preprocessor(pre, max_windows=4).stride
        3
        """
        config = preprocessor.get_config()
        if "tokenizer" in config:  # the tokenizer object itself, as `with_options` passes it
            config["vocabulary"] = keras.saving.deserialize_keras_object(
                config.pop("tokenizer"))
        return cls.from_config({**config, "stride": stride, "max_windows": max_windows})

    def call(self, inputs, static_shape=None):
        if isinstance(inputs, tuple):
            raise ValueError("LongTextPreprocessor reads one text per example, not pairs")
        static_shape = self.static_shape if static_shape is None else static_shape
        single = inputs.shape.rank == 0
        texts = tf.reshape(inputs, [-1]) if single else inputs
        if self._cut_texts:
            texts = cut_texts(texts, self.max_text_bytes)
        windows = self.windows(self.tokenizer(texts), static_shape)
        return {name: value[0] for name, value in windows.items()} if single else windows

    def windows(self, ids, static_shape=None):
        """The packed windows of tokenized texts (int ragged `[batch, (pieces)]`)."""
        static_shape = self.static_shape if static_shape is None else static_shape
        return pack_windows(self.packer, ids, self.stride, self.max_windows, static_shape)

    def compute_output_spec(self, inputs, static_shape=None):
        static_shape = self.static_shape if static_shape is None else static_shape
        if isinstance(inputs, tuple) or len(inputs.shape) not in (0, 1):
            raise ValueError(f"Expected a string or a 1-D batch of strings, got {inputs}.")
        shape = (*inputs.shape, *((self.max_windows, self.seq_length) if static_shape
                                  else (None, None)))
        return {name: keras.KerasTensor(shape, dtype="int32")
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def get_config(self):
        return {**super().get_config(), "stride": self.stride, "max_windows": self.max_windows}
