"""Keras layers of BERT, in `keras.ops`; only the training-time XLA fusion of `fusion` (GELU,
LayerNorm, dropout) uses TensorFlow, when Keras runs on it."""

from keras_bert_core.layers.attention import MultiHeadSelfAttention, attention_bias
from keras_bert_core.layers.disentangled_attention import DisentangledSelfAttention
from keras_bert_core.layers.embeddings import BertEmbeddings, SharedEmbeddings, document_positions
from keras_bert_core.layers.heads import ClassificationHead, MaskedLMHead, SpanLabelingHead
from keras_bert_core.layers.layer_norm import LayerNorm
from keras_bert_core.layers.pooling import SentencePooling
from keras_bert_core.layers.relative_positions import RelativeEmbeddings
from keras_bert_core.layers.replaced_tokens import ReplacedTokenSampler
from keras_bert_core.layers.transformer import TransformerEncoderBlock

__all__ = [
    "BertEmbeddings",
    "SharedEmbeddings",
    "ReplacedTokenSampler",
    "MultiHeadSelfAttention",
    "DisentangledSelfAttention",
    "RelativeEmbeddings",
    "TransformerEncoderBlock",
    "attention_bias",
    "document_positions",
    "LayerNorm",
    "SentencePooling",
    "ClassificationHead",
    "MaskedLMHead",
    "SpanLabelingHead",
]
