"""Raw text to BERT encoder inputs, inside the TensorFlow graph."""

import keras
import tensorflow as tf

from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs text into the int32 inputs of a BERT encoder.

    A `BertTokenizer` followed by a `BertPacker`. Call it on strings for single-segment
    tasks, or on a tuple `(a, b)` of strings for pairs; it runs in `tf.data`, in a
    `tf.function`, in an exported SavedModel and, with `tflite_compatible=True`, in TFLite.

    Args:
        vocabulary: path to a BERT `vocab.txt` or a list of tokens.
        seq_length: the longest packed sequence, special tokens included.
        lower_case: uncased (lower case, NFD, strip accents) if True, cased if False.
        truncation: `"round_robin"` or `"longest_first"`, see `BertPacker`.
        static_shape: if True, outputs are [batch, seq_length] (training). If False, they are
            padded to the longest sequence of the batch rounded up to a multiple of 8, at
            most `seq_length` (inference). `call` can override it.
        tflite_compatible: tokenize with ops that convert to TFLite (the same ids and
            offsets; see `BertTokenizer`). Pass such a preprocessor to `export_saved_model`
            to serve exactly the phone's pipeline.
        max_text_bytes: tokenize only this many first bytes of each text, cut at a
            character boundary (see `BertTokenizer`); None: whole texts.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string, a list of strings or a string tensor of rank 0 or 1; or a tuple
            `(a, b)` of two such for pairs (a tuple is always read as segments; a list is a
            batch).
        static_shape: overrides the constructor's `static_shape` when not None.

    Returns:
        dict of int32 tensors [batch, length] (or [length] for a single string):
        `token_ids`, `segment_ids`, `padding_mask`.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]
    >>> preprocessor = BertPreprocessor(vocab, seq_length=16)
    >>> out = preprocessor(["The quick fox."])
    >>> out["token_ids"].numpy().tolist()
    [[2, 5, 6, 7, 8, 9, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    >>> out = preprocessor((["The fox"], ["quick."]), static_shape=False)
    >>> out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
    ([[2, 5, 8, 3, 6, 7, 9, 3]], [[0, 0, 0, 0, 1, 1, 1, 1]])
    """

    def __init__(
        self,
        vocabulary,
        seq_length=128,
        lower_case=True,
        truncation="round_robin",
        static_shape=True,
        tflite_compatible=False,
        max_text_bytes=None,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.tokenizer = BertTokenizer(
            vocabulary, lower_case=lower_case, tflite_compatible=tflite_compatible,
            max_text_bytes=max_text_bytes,
        )
        self.packer = BertPacker(
            seq_length,
            cls_id=self.tokenizer.cls_id,
            sep_id=self.tokenizer.sep_id,
            pad_id=self.tokenizer.pad_id,
            truncation=truncation,
            static_shape=static_shape,
        )
        self.seq_length = self.packer.seq_length
        self.lower_case = self.tokenizer.lower_case
        self.truncation = truncation
        self.static_shape = self.packer.static_shape
        self.tflite_compatible = self.tokenizer.tflite_compatible
        self.max_text_bytes = self.tokenizer.max_text_bytes
        self.built = True

    @property
    def vocabulary(self):
        return self.tokenizer.vocabulary

    @property
    def cls_id(self):
        return self.tokenizer.cls_id

    @property
    def sep_id(self):
        return self.tokenizer.sep_id

    @property
    def pad_id(self):
        return self.tokenizer.pad_id

    @property
    def mask_id(self):
        return self.tokenizer.mask_id

    @property
    def unk_id(self):
        return self.tokenizer.unk_id

    def __call__(self, inputs, *args, **kwargs):
        # Keras refuses a tuple that mixes tensors with Python strings: convert those first.
        if isinstance(inputs, tuple):
            inputs = tuple(_as_tensor(x) for x in inputs)
        else:
            inputs = _as_tensor(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, static_shape=None):
        static_shape = self.static_shape if static_shape is None else static_shape
        segments = inputs if isinstance(inputs, tuple) else (inputs,)
        token_ids = tuple(self.tokenizer(s) for s in segments)
        return self.packer(token_ids, static_shape=static_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self.vocabulary),
                "seq_length": self.seq_length,
                "lower_case": self.lower_case,
                "truncation": self.truncation,
                "static_shape": self.static_shape,
                "tflite_compatible": self.tflite_compatible,
                "max_text_bytes": self.max_text_bytes,
            }
        )
        return config


def _as_tensor(strings):
    if isinstance(strings, (tf.Tensor, keras.KerasTensor)):
        return strings
    return tf.convert_to_tensor(strings, tf.string)
