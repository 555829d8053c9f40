"""The base of the package's text layers: strings in as they are, int32 ids out."""

import keras

from keras_bert_core import keras_internals


class PreprocessingLayer(keras.layers.Layer):
    """Base of the package's text layers (tokenizers, packer, preprocessor).

    They take strings (a Python list, a string tensor) or ids and give int32 ids, so their
    inputs go in as they are (Keras would cast them to the layer's dtype), and they hold no
    weights to build: they are built from the start.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments; `dtype` defaults to int32.

    Example:
    >>> import tensorflow as tf
    >>> class Lengths(PreprocessingLayer):
    ...     def call(self, texts):
    ...         return tf.strings.length(texts)
    >>> Lengths()(["ab", "abc"]).numpy().tolist()
    [2, 3]
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        keras_internals.take_inputs_as_given(self)
        self.built = True
