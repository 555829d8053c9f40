"""Text to ids, in the graph: WordPiece tokenizer, packer, preprocessor, MLM masking,
pretraining data, vocabulary learning, task data (files, SQuAD, CoNLL, TFDS), op allowlists."""

from keras_bert_core.errors import DataError
from keras_bert_core.text.masking import MaskedLMMasker
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
from keras_bert_core.text.pretraining_data import (
    pretraining_dataset,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert_core.text.squad import extract_answers, load_squad, squad_features, squad_metrics
from keras_bert_core.text.tagging import entity_scores, load_conll, predictions_to_tags
from keras_bert_core.text.task_data import load_multiple_choice, load_text_classification
from keras_bert_core.text.tfds_tasks import load_tfds_task
from keras_bert_core.text.tokenizer import BertTokenizer
from keras_bert_core.text.vocab_file import SPECIAL_TOKENS, load_vocabulary
from keras_bert_core.text.vocab_learning import learn_wordpiece_vocab

__all__ = [
    "BertPacker",
    "DataError",
    "MaskedLMMasker",
    "entity_scores",
    "extract_answers",
    "learn_wordpiece_vocab",
    "load_conll",
    "load_multiple_choice",
    "load_squad",
    "load_text_classification",
    "load_tfds_task",
    "predictions_to_tags",
    "pretraining_dataset",
    "read_pretraining_tfrecords",
    "squad_features",
    "squad_metrics",
    "write_pretraining_tfrecords",
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
