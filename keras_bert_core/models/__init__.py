"""Functional Keras models built from `layers/`: the encoder and the task models."""

from keras_bert_core.models.encoder import BertEncoder

__all__ = ["BertEncoder"]
