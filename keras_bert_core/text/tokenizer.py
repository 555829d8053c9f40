"""The base of the package's tokenizers (WordPiece, byte-level BPE, SentencePiece)."""

from keras_bert_core.text.preprocessing_layer import PreprocessingLayer
from keras_bert_core.text.special_tokens import SpecialTokenIds
from keras_bert_core.text.vocabulary.assets import VocabularyAssets


class Tokenizer(VocabularyAssets, SpecialTokenIds, PreprocessingLayer):
    """Base of the package's tokenizer layers: strings in, ids out (`PreprocessingLayer`),
    the ids of the special tokens (`SpecialTokenIds`), the vocabulary files as `.keras`
    assets (`VocabularyAssets`).

    Each subclass sets `vocabulary_kind`, the kind of vocabulary files it is made from
    (one of `text.vocabulary.files.TOKENIZER_KINDS`): what the preprocessor packs and the
    files written for it follow from it.

    Example:
    >>> from keras_bert_core.text import BertTokenizer, BytePairTokenizer
    >>> BertTokenizer.vocabulary_kind, BytePairTokenizer.vocabulary_kind
    ('wordpiece', 'byte_pair')
    """

    vocabulary_kind = None
