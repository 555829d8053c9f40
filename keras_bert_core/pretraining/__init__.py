"""Pretraining data made from text files: the corpus (`corpus`), sentence pairs (`pairs`),
MLM masking (`masking`), the `tf.data` pipeline (`data`), packed rows (`packing`) and
TFRecords (`tfrecords`)."""

from keras_bert_core.pretraining.data import pretraining_dataset
from keras_bert_core.pretraining.masking import MaskedLMMasker
from keras_bert_core.pretraining.tfrecords import (
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)

__all__ = [
    "MaskedLMMasker",
    "pretraining_dataset",
    "read_pretraining_tfrecords",
    "write_pretraining_tfrecords",
]
