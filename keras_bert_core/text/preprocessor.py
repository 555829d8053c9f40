"""Raw text to BERT encoder inputs, inside the TensorFlow graph."""

import os

import keras
import tensorflow as tf

from keras_bert_core.text.byte_pair.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.preprocessing_layer import PreprocessingLayer
from keras_bert_core.text.sentencepiece.deberta_tokenizer import DebertaTokenizer
from keras_bert_core.text.sentencepiece.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_core.text.sentencepiece.xlm_roberta_tokenizer import XlmRobertaTokenizer
from keras_bert_core.text.string_batches import check_max_text_bytes, cut_texts
from keras_bert_core.text.vocabulary.files import (
    BYTE_PAIR,
    FAIRSEQ_SENTENCEPIECE,
    SENTENCEPIECE,
    WORDPIECE,
    find_vocabulary,
    tokenizer_kind,
)
from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer

# Preprocessor arguments that a tokenizer (if it takes them) takes too.
_TOKENIZER_OPTIONS = ("lower_case", "tflite_compatible", "max_text_bytes")
# How each tokenizer's family packs pairs (BertPacker's options): RoBERTa (byte-level BPE)
# and XLM-RoBERTa (fairseq SentencePiece) as `<s> A </s></s> B </s>` with one token type;
# BERT, DistilBERT and ALBERT as `[CLS] A [SEP] B [SEP]` with segment ids 0 and 1.
PACKING = {
    WORDPIECE: {"pair_separators": 1, "second_segment_id": 1},
    SENTENCEPIECE: {"pair_separators": 1, "second_segment_id": 1},
    BYTE_PAIR: {"pair_separators": 2, "second_segment_id": 0},
    FAIRSEQ_SENTENCEPIECE: {"pair_separators": 2, "second_segment_id": 0},
}
# ModernBERT's byte-level BPE names BERT's special tokens and packs as BERT does, with one
# token type.
BERT_NAMED_BYTE_PAIR_PACKING = {"pair_separators": 1, "second_segment_id": 0}


def packing_of(tokenizer):
    """The `BertPacker` options of `tokenizer`'s family."""
    kind = tokenizer_kind(tokenizer)
    if kind == BYTE_PAIR and tokenizer.special_tokens["sep"] == "[SEP]":
        return BERT_NAMED_BYTE_PAIR_PACKING
    return PACKING[kind]


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertPreprocessor(PreprocessingLayer):
    """Tokenizes and packs text into the int32 inputs of a BERT-family encoder.

    A tokenizer followed by a `BertPacker`. Call it on strings for single-segment tasks,
    or on a tuple `(a, b)` of strings for pairs; it runs in `tf.data`, in a
    `tf.function`, in an exported SavedModel and, with `tflite_compatible=True`, in TFLite
    (WordPiece and SentencePiece).

    The tokenizer is the one the vocabulary is for:

    - a WordPiece `vocab.txt` (or a list of tokens): `BertTokenizer` (BERT, DistilBERT),
      pairs packed `[CLS] A [SEP] B [SEP]`, segment ids 0 then 1;
    - a byte-level BPE `vocab.json` (with `merges.txt` beside it or `merges`), or a dict:
      `BytePairTokenizer` (RoBERTa), pairs packed `<s> A </s></s> B </s>`, segment ids all
      0 (RoBERTa has one token type), as Hugging Face's `RobertaProcessing`; a byte-level
      BPE with BERT's `[CLS]`... (ModernBERT's `tokenizer.json`) packs `[CLS] A [SEP] B
      [SEP]`, segment ids all 0;
    - a SentencePiece `.model` file (or its bytes): `SentencePieceTokenizer` (ALBERT),
      packed as BERT; DeBERTa's `spm.model`: `DebertaTokenizer`, packed as BERT (DeBERTa-v3
      has no token types: its segment ids are ignored);
    - XLM-RoBERTa's `sentencepiece.bpe.model`: `XlmRobertaTokenizer` (fairseq's ids), packed
      as RoBERTa;
    - a folder, e.g. a Hugging Face checkpoint: the first of `spiece.model`,
      `sentencepiece.bpe.model`, `vocab.json` with `merges.txt`, `vocab.txt`, `spm.model` it
      holds, else the WordPiece, byte-level BPE or XLM-RoBERTa vocabulary inside its
      `tokenizer.json` (see `text.vocabulary.files.find_vocabulary`),
      with `do_lower_case` (and `keep_accents`) from its `tokenizer_config.json`;
    - a tokenizer layer of this package, used as it is (e.g. a `SentencePieceTokenizer`
      with `keep_accents=True`).

    Saved in a `.keras` file (alone, inside a model, or as a task model's `preprocessor`),
    its tokenizer's vocabulary files are assets of the file (e.g.
    `assets/preprocessor/tokenizer/vocab.txt`), not part of `config.json`; see
    `keras_bert_core.text.vocabulary.assets`. `get_config` in memory still holds them.

    Args:
        vocabulary: the vocabulary or tokenizer, as above.
        seq_length: the longest packed sequence, special tokens included.
        lower_case: whether text is lower-cased (WordPiece: lower case, NFD and accents
            stripped; SentencePiece: as ALBERT's tokenizer). None (default): the
            vocabulary's own setting: a folder's `do_lower_case` if it says, otherwise True
            (uncased BERT, ALBERT), and False for byte-level BPE, which is always cased
            (passing True with it is an error).
        truncation: `"round_robin"` or `"longest_first"`, see `BertPacker`.
        static_shape: if True, outputs are [batch, seq_length] (training). If False, they are
            padded to the longest sequence of the batch rounded up to a multiple of 8, at
            most `seq_length` (inference). `call` can override it.
        tflite_compatible: tokenize with ops that convert to TFLite (the same ids; see
            `BertTokenizer` and `SentencePieceTokenizer`). Pass such a preprocessor to
            `export_saved_model` to serve exactly the phone's pipeline. Byte-level BPE has
            no such pipeline (True is an error). None (default): False, or a given
            tokenizer's own.
        max_text_bytes: tokenize only this many first bytes of each text, cut at a
            character boundary (see `BertTokenizer`); None: whole texts. The WordPiece and
            SentencePiece tokenizers cut with TFLite-compatible ops; byte-level BPE, which
            has no TFLite pipeline, cuts here.
        merges: the merges of a BPE vocabulary (a `merges.txt` path or a list of
            `"left right"` strings) when they are not beside its `vocab.json`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string, a list of strings or a string tensor of rank 0 or 1; or a tuple
            `(a, b)` of two such for pairs (a tuple is always read as segments; a list is a
            batch).
        static_shape: overrides the constructor's `static_shape` when not None.

    Returns:
        dict of int32 tensors [batch, length] (or [length] for a single string):
        `token_ids`, `segment_ids`, `padding_mask`.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]
    >>> preprocessor = BertPreprocessor(vocab, seq_length=16)
    >>> out = preprocessor(["The quick fox."])
    >>> out["token_ids"].numpy().tolist()
    [[2, 5, 6, 7, 8, 9, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    >>> out = preprocessor((["The fox"], ["quick."]), static_shape=False)
    >>> out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
    ([[2, 5, 8, 3, 6, 7, 9, 3]], [[0, 0, 0, 0, 1, 1, 1, 1]])

    A byte-level BPE vocabulary (RoBERTa's layout):
    >>> from keras_bert_core.text.vocabulary.byte_pair_vocabulary import bytes_to_unicode
    >>> bpe_vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}
    >>> bpe_vocab.update({s: 5 + b for b, s in bytes_to_unicode().items()})
    >>> bpe_vocab.update({"ox": 261, "Ġf": 262, "Ġfox": 263})
    >>> roberta = BertPreprocessor(bpe_vocab, seq_length=16, merges=["o x", "Ġ f", "Ġf ox"],
    ...                            static_shape=False)
    >>> roberta.tokenizer_kind, roberta.lower_case
    ('byte_pair', False)
    >>> out = roberta((["a fox"], ["fox"]))
    >>> out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
    ([[0, 102, 263, 2, 2, 107, 261, 2]], [[0, 0, 0, 0, 0, 0, 0, 0]])
    """

    def __init__(
        self,
        vocabulary,
        seq_length=128,
        lower_case=None,
        truncation="round_robin",
        static_shape=True,
        tflite_compatible=None,
        max_text_bytes=None,
        merges=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_max_text_bytes(max_text_bytes)
        self.tokenizer = _tokenizer(vocabulary, merges, lower_case, tflite_compatible,
                                    max_text_bytes)
        self.tokenizer_kind = tokenizer_kind(self.tokenizer)
        self.seq_length = int(seq_length)
        self.lower_case = bool(getattr(self.tokenizer, "lower_case", False))
        self.truncation = truncation
        self.static_shape = bool(static_shape)
        self._packer = None
        if self.tokenizer.has_vocabulary:  # else once `load_assets` gave it one
            self._packer = self.packer
        self.tflite_compatible = bool(getattr(self.tokenizer, "tflite_compatible", False))
        self.max_text_bytes = getattr(self.tokenizer, "max_text_bytes", max_text_bytes)
        # A tokenizer that does not cut texts itself (BPE) gets them cut here, with string
        # ops that TFLite lacks.
        self._cut_texts = (max_text_bytes is not None
                           and not hasattr(self.tokenizer, "max_text_bytes"))
        self._tokens = None

    @property
    def packer(self):
        """The `BertPacker`, made from the tokenizer's special tokens."""
        if self._packer is None:
            self._packer = BertPacker(
                self.seq_length,
                cls_id=self.tokenizer.cls_id,
                sep_id=self.tokenizer.sep_id,
                pad_id=self.tokenizer.pad_id,
                truncation=self.truncation,
                static_shape=self.static_shape,
                **packing_of(self.tokenizer),
            )
        return self._packer

    @property
    def vocabulary(self):
        """The tokens, index = id, whatever the tokenizer (ids no token has are "")."""
        if self._tokens is None:
            if self.tokenizer_kind == WORDPIECE:
                self._tokens = list(self.tokenizer.vocabulary)
            else:
                size = (max(self.tokenizer.vocabulary.values()) + 1
                        if self.tokenizer_kind == BYTE_PAIR
                        else self.tokenizer.vocabulary_size())
                by_id = {}
                for i in range(size):
                    try:
                        by_id[i] = self.tokenizer.id_to_token(i)
                    except KeyError:
                        by_id[i] = ""
                self._tokens = [by_id[i] for i in range(size)]
        return self._tokens

    @property
    def cls_id(self):
        return self.tokenizer.cls_id

    @property
    def sep_id(self):
        return self.tokenizer.sep_id

    @property
    def pad_id(self):
        return self.tokenizer.pad_id

    @property
    def mask_id(self):
        return self.tokenizer.mask_id

    @property
    def unk_id(self):
        return self.tokenizer.unk_id

    def __call__(self, inputs, *args, **kwargs):
        # Keras refuses a tuple that mixes tensors with Python strings: convert those first.
        if isinstance(inputs, tuple):
            inputs = tuple(_as_tensor(x) for x in inputs)
        else:
            inputs = _as_tensor(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, static_shape=None):
        static_shape = self.static_shape if static_shape is None else static_shape
        segments = inputs if isinstance(inputs, tuple) else (inputs,)
        if self._cut_texts:
            segments = tuple(cut_texts(s, self.max_text_bytes) for s in segments)
        token_ids = tuple(self.tokenizer(s) for s in segments)
        return self.packer(token_ids, static_shape=static_shape)

    def compute_output_spec(self, inputs, static_shape=None):
        # Known without tracing the tokenizer (a symbolic call, e.g. building or loading a
        # Keras model, would otherwise trace it: many ops for byte-level BPE).
        static_shape = self.static_shape if static_shape is None else static_shape
        first = inputs[0] if isinstance(inputs, tuple) else inputs
        if len(first.shape) not in (0, 1):
            raise ValueError(f"Expected a string or a 1-D batch of strings, got shape "
                             f"{first.shape}.")
        shape = (*first.shape, self.seq_length if static_shape else None)
        return {name: keras.KerasTensor(shape, dtype="int32")
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def with_options(self, **options):
        """A new preprocessor with the same vocabulary and settings but `options` (e.g.
        `tflite_compatible=True`, `max_text_bytes=...`, `seq_length=...`)."""
        config = self.get_config()
        tokenizer = config.pop("tokenizer", None)
        if tokenizer is not None:
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
            tokenizer_config = tokenizer.get_config()
            tokenizer_options = {k: v for k, v in options.items() if k in _TOKENIZER_OPTIONS
                                 and k in tokenizer_config}
            if tokenizer_options:
                tokenizer = type(tokenizer).from_config({**tokenizer_config,
                                                         **tokenizer_options})
            config["vocabulary"] = tokenizer
        config.update(options)
        return type(self).from_config(config)

    def get_config(self):
        config = super().get_config()
        # WordPiece keeps the config it always had; BPE stores its vocabulary and merges,
        # SentencePiece its tokenizer (with its model and options). In a `.keras` file every
        # kind stores its tokenizer, whose vocabulary files are assets (text.vocabulary.assets).
        # A BPE tokenizer with steps before BPE (NFC, added tokens) stores itself whole: the
        # vocabulary-and-merges form, kept for the configs of earlier releases, has no room.
        steps_before_bpe = self.tokenizer_kind == BYTE_PAIR and (
            self.tokenizer.normalization or self.tokenizer.added_tokens)
        if not self.tokenizer.config_holds_vocabulary or steps_before_bpe:
            vocabulary = {"vocabulary": None,
                          "tokenizer": keras.saving.serialize_keras_object(self.tokenizer)}
        elif self.tokenizer_kind == WORDPIECE:
            vocabulary = {"vocabulary": list(self.tokenizer.vocabulary)}
        elif self.tokenizer_kind == BYTE_PAIR:
            vocabulary = {"vocabulary": dict(self.tokenizer.vocabulary),
                          "merges": list(self.tokenizer.merges)}
        else:
            vocabulary = {"tokenizer": keras.saving.serialize_keras_object(self.tokenizer)}
        config.update(
            {
                **vocabulary,
                "seq_length": self.seq_length,
                "lower_case": self.lower_case,
                "truncation": self.truncation,
                "static_shape": self.static_shape,
                "tflite_compatible": self.tflite_compatible,
                "max_text_bytes": self.max_text_bytes,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "tokenizer" in config:
            tokenizer = config.pop("tokenizer")
            if (tokenizer.get("class_name") == "SentencePieceTokenizer"
                    and "max_text_bytes" not in tokenizer.get("config", {})):
                # Saved before SentencePieceTokenizer cut texts itself: the cut was ours.
                tokenizer = {**tokenizer, "config": {
                    **tokenizer["config"], "max_text_bytes": config.get("max_text_bytes")}}
            config["vocabulary"] = keras.saving.deserialize_keras_object(tokenizer)
        return cls(**config)


def _tokenizer(vocabulary, merges, lower_case, tflite_compatible, max_text_bytes):
    """The tokenizer layer for `vocabulary` (see `BertPreprocessor`)."""
    if isinstance(vocabulary, keras.layers.Layer):
        kind = tokenizer_kind(vocabulary)
        given = {"lower_case": lower_case, "tflite_compatible": tflite_compatible,
                 "max_text_bytes": max_text_bytes}
        for name, value in given.items():
            if value is None or not hasattr(vocabulary, name):
                continue
            own = getattr(vocabulary, name)
            if value != own:
                raise ValueError(f"{name}={value} disagrees with the given {kind} tokenizer's "
                                 f"{name}={own}; build the tokenizer with it instead")
        if merges is not None:
            raise ValueError("merges is for a BPE vocabulary, not with a tokenizer")
        return vocabulary
    source = find_vocabulary(vocabulary, merges)
    if source.kind == BYTE_PAIR:
        if lower_case:
            raise ValueError("byte-level BPE vocabularies (RoBERTa) are cased: the tokenizer "
                             "never lower-cases. Leave lower_case unset (None) or False.")
        if tflite_compatible:
            raise ValueError("BytePairTokenizer has no TFLite-compatible pipeline: its "
                             "pre-tokenization regex, string and ragged ops are not TFLite "
                             "ops (see export_tflite, which offers ids in for BPE models).")
        return BytePairTokenizer(source.vocabulary, source.merges, **source.options)
    if source.kind == FAIRSEQ_SENTENCEPIECE:
        if lower_case:
            raise ValueError("XLM-RoBERTa's SentencePiece vocabulary is cased: the tokenizer "
                             "never lower-cases. Leave lower_case unset (None) or False.")
        return XlmRobertaTokenizer(source.vocabulary, tflite_compatible=bool(tflite_compatible),
                                   max_text_bytes=max_text_bytes)
    deberta = (source.kind == SENTENCEPIECE
               and os.path.basename(source.file or "") == DebertaTokenizer.MODEL_FILE)
    if lower_case is None:  # DeBERTa-v3 is cased
        lower_case = source.options.get("lower_case", not deberta)
    if deberta:
        return DebertaTokenizer(source.vocabulary, lower_case=lower_case,
                                tflite_compatible=bool(tflite_compatible),
                                max_text_bytes=max_text_bytes)
    if source.kind == WORDPIECE:
        return BertTokenizer(source.vocabulary, lower_case=lower_case,
                             tflite_compatible=bool(tflite_compatible),
                             max_text_bytes=max_text_bytes)
    options = {k: v for k, v in source.options.items() if k == "keep_accents"}
    return SentencePieceTokenizer(source.vocabulary, lower_case=lower_case,
                                  tflite_compatible=bool(tflite_compatible),
                                  max_text_bytes=max_text_bytes, **options)


def _as_tensor(strings):
    if isinstance(strings, keras.KerasTensor) or (
            isinstance(strings, tf.Tensor) and strings.dtype == tf.string):
        return strings
    try:
        return tf.convert_to_tensor(strings, tf.string)
    except (TypeError, ValueError) as e:  # TensorFlow's words name no input that works
        got = f"a {strings.dtype.name} tensor" if isinstance(strings, tf.Tensor) else \
            f"{type(strings).__name__} {str(strings)[:80]}"
        raise TypeError(f"the preprocessor takes texts (a string, a list or array of "
                        f"strings, a string tensor; a tuple of two for pairs), got {got} "
                        f"({str(e).splitlines()[0][:120]})") from None
