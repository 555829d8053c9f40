"""Keras layers of BERT; backend-agnostic (`keras.ops`), no TensorFlow-only code."""

from keras_bert_core.layers.attention import MultiHeadSelfAttention, attention_bias
from keras_bert_core.layers.embeddings import BertEmbeddings
from keras_bert_core.layers.transformer import TransformerEncoderBlock

__all__ = ["BertEmbeddings", "MultiHeadSelfAttention", "TransformerEncoderBlock", "attention_bias"]
