"""In-graph text processing and pretraining data: text to ids in the graph (WordPiece
and byte-level BPE tokenizers, packer, preprocessor, MLM masking), vocabulary learning, and
pretraining data made from text files (`pretraining_corpus`, `pretraining_pairs`,
`pretraining_data`, `pretraining_tfrecords`, `pretraining_packing`). Task data lives in
`keras_bert_core.tasks`, the exports' op allowlists in `keras_bert_core.export`."""

from keras_bert_core.errors import DataError
from keras_bert_core.text.bpe_tokenizer import BytePairTokenizer
from keras_bert_core.text.masking import MaskedLMMasker
from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.pretraining_data import pretraining_dataset
from keras_bert_core.text.pretraining_tfrecords import (
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert_core.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_core.text.tokenizer import BertTokenizer
from keras_bert_core.text.vocab_file import SPECIAL_TOKENS, load_vocabulary
from keras_bert_core.text.vocab_learning import learn_wordpiece_vocab

__all__ = [
    "BertPacker",
    "DataError",
    "MaskedLMMasker",
    "learn_wordpiece_vocab",
    "pretraining_dataset",
    "read_pretraining_tfrecords",
    "write_pretraining_tfrecords",
    "BertPreprocessor",
    "BertTokenizer",
    "BytePairTokenizer",
    "SentencePieceTokenizer",
    "SPECIAL_TOKENS",
    "load_vocabulary",
]
