"""In-graph text preprocessing: WordPiece tokenizer, packer, preprocessor, op allowlists."""

from keras_bert_core.text.op_allowlists import (
    TF_SERVING_TEXT_OPS,
    TFLITE_CUSTOM_OPS,
    graph_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)
from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.tokenizer import BertTokenizer
from keras_bert_core.text.vocab_file import SPECIAL_TOKENS, load_vocabulary

__all__ = [
    "BertPacker",
    "BertPreprocessor",
    "BertTokenizer",
    "SPECIAL_TOKENS",
    "TFLITE_CUSTOM_OPS",
    "TF_SERVING_TEXT_OPS",
    "graph_op_types",
    "load_vocabulary",
    "tflite_op_types",
    "unsupported_tf_serving_ops",
    "unsupported_tflite_ops",
]
