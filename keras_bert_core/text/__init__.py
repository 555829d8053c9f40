"""In-graph text processing: text to ids in the graph, by tokenizer algorithm (`wordpiece`,
`byte_pair`, `sentencepiece`), their vocabulary files (`vocabulary`: finding, writing,
`.keras` assets, learning), the packer and the preprocessors (`windows`: long texts as
overlapping windows). Pretraining data lives in `keras_bert_core.pretraining`, task data in
`keras_bert_core.tasks`, the exports' op allowlists in `keras_bert_core.export`."""

from keras_bert_core.errors import DataError
from keras_bert_core.text.byte_pair.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_core.text.long_text_preprocessor import LongTextPreprocessor
from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.sentencepiece.deberta_tokenizer import DebertaTokenizer
from keras_bert_core.text.sentencepiece.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_core.text.sentencepiece.xlm_roberta_tokenizer import XlmRobertaTokenizer
from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab
from keras_bert_core.text.vocabulary.wordpiece_vocabulary import SPECIAL_TOKENS, load_vocabulary
from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer

__all__ = [
    "BertPacker",
    "DataError",
    "learn_wordpiece_vocab",
    "LongTextPreprocessor",
    "BertPreprocessor",
    "BertTokenizer",
    "BytePairTokenizer",
    "SentencePieceTokenizer",
    "DebertaTokenizer",
    "SPECIAL_TOKENS",
    "load_vocabulary",
    "XlmRobertaTokenizer",
]
