"""Keras layers of BERT; backend-agnostic (`keras.ops`), no TensorFlow-only code."""

from keras_bert_core.layers.attention import MultiHeadSelfAttention, attention_bias
from keras_bert_core.layers.embeddings import BertEmbeddings, document_positions
from keras_bert_core.layers.heads import ClassificationHead, MaskedLMHead, SpanLabelingHead
from keras_bert_core.layers.transformer import TransformerEncoderBlock

__all__ = [
    "BertEmbeddings",
    "MultiHeadSelfAttention",
    "TransformerEncoderBlock",
    "attention_bias",
    "document_positions",
    "ClassificationHead",
    "MaskedLMHead",
    "SpanLabelingHead",
]
