"""SentencePiece tokenization (ALBERT) inside the TensorFlow graph.

The layer gives the ids of the ``sentencepiece`` library (``SentencePieceProcessor.encode``)
applied to a text after ALBERT's preprocessing (``preprocess_text`` of ALBERT's original
``tokenization.py`` and of transformers 4's slow ``AlbertTokenizer``):

1. whitespace runs become one space, none at either end (``" ".join(text.split())``, with
   Python's whitespace);
2. ``````  and ``''`` become ``"``;
3. unless ``keep_accents``: NFKD, then every combining character (canonical combining class
   other than 0) removed;
4. if ``lower_case``: Python's ``str.lower`` (full case mapping, with the final-sigma rule).

The model's own normalizer (``nmt_nfkc`` in ALBERT's models) then runs inside the
SentencePiece op. (ALBERT's ``encode_pieces`` and that slow tokenizer also split a piece
that ends in a digit and a comma, ``"▁1,"``, into ``"▁1", ","``; ``SentencePieceProcessor``
does not, nor does this layer.) Steps 1-4 work one character at a time, except where they
look at neighbours (whitespace runs, quote pairs, the final sigma), so a table made in
Python from ``unicodedata`` at construction says, for every code point, what they make of
it (its kind, its output characters and what the final-sigma rule sees of them); the graph
looks characters up in it, settles the neighbours with index arithmetic and spells the
preprocessed text. NFKD's reordering of combining marks only moves marks that step 3
removes, so one character at a time is exact. Python's Unicode tables are the reference's
own: the table follows the Python that builds it.

Both pipelines tokenize with tf.text's ``FastSentencepieceTokenize``, which gives the ids
of the ``sentencepiece`` library itself (tf.text's older ``SentencepieceTokenizeOp``
bundles an older ``sentencepiece`` that orders the pieces of equally scored segmentations
differently: ``"00", "0"`` for ``"0", "00"`` in a run of digits):

* Default (TF Serving): UTF-8 decoded with ``UnicodeDecodeWithOffsets``, the text spelled
  with ``UnicodeEncode`` (TensorFlow core ops).
* ``tflite_compatible=True``: UTF-8 decoded by arithmetic on the bytes
  (``ByteSplitWithOffsets``), the text spelled byte by byte with
  ``FastWordpieceDetokenize`` (a vocabulary of the 255 non-zero bytes): TFLite builtins
  plus three tf.text ops, which tf.text's TFLite registrar resolves; the same graph runs
  in TensorFlow. A NUL character, which that vocabulary cannot spell, is spelled as a
  private-use character that no piece holds (both are unknown characters to the model).

The fast op gives no offsets. The default pipeline's ``tokenize_with_offsets`` places its
pieces with the offsets that ``SentencepieceTokenizeWithOffsetsOp`` gives the same text
(``PieceOffsets``); that op has no TFLite kernel, so the TFLite-compatible pipeline replays
the model's normalizer and pieces on character counts instead (``TfliteOffsets``, tables
from the model's ``precompiled_charsmap``): the ``sentencepiece`` library's own offsets,
which the default pipeline's equal but where the op orders tied pieces differently.

Invalid UTF-8 reads as U+FFFD (which ``nmt_nfkc`` removes). Special tokens are never
produced from text: ``"[CLS]"`` in a text is tokenized as its characters.
"""

import base64
import functools
import os

import keras
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import SentencePieceProcessor

from keras_bert_core import tensorflow_internals
from keras_bert_core.text.sentencepiece.albert_preprocessing import AlbertPreprocessing
from keras_bert_core.text.sentencepiece.characters import (
    ByteSpeller,
    characters,
    spell,
    tflite_characters,
)
from keras_bert_core.text.sentencepiece.offsets import PieceOffsets, input_offsets
from keras_bert_core.text.sentencepiece.tflite_offsets import TfliteOffsets
from keras_bert_core.text.string_batches import (
    check_max_text_bytes,
    cut_texts,
)
from keras_bert_core.text.tokenizer import Tokenizer
from keras_bert_core.text.vocabulary.files import SENTENCEPIECE


@functools.cache
def _sentencepiece_op_tokenizer(model):
    """tf.text's `SentencepieceTokenizer` of a model (one per process) on the shared
    resource."""
    with tf.init_scope():
        tokenizer = tf_text.SentencepieceTokenizer(model, out_type=tf.int32)
        tensorflow_internals.share_sentencepiece_model(tokenizer, model)
    return tokenizer


def _read_model(model):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            return f.read()
    raise TypeError(f"model must be a path to a SentencePiece model or its bytes, got "
                    f"{type(model).__name__}")


@keras.saving.register_keras_serializable(package="keras_bert_core")
class SentencePieceTokenizer(Tokenizer):
    """SentencePiece tokenizer with ALBERT's preprocessing, inside the TensorFlow graph.

    Strings go in, piece ids come out: in a `tf.data` pipeline, in a `tf.function`, in an
    exported SavedModel (TF Serving) and, with `tflite_compatible=True`, in a TFLite model.
    The ids are those of the `sentencepiece` library on the text as ALBERT preprocesses it:
    whitespace runs collapsed, ```` `` ```` and `''` read as `"`, accents stripped (NFKD
    without combining characters) unless `keep_accents`, lower case if `lower_case`, on
    both pipelines and with or without offsets. Special tokens are never produced from
    text; add them with a packer.

    Offsets: the default pipeline places the ids with the offsets of tf.text's
    `SentencepieceTokenizeWithOffsetsOp` (the fast op gives none); the TFLite-compatible one
    counts the model normalizer's units and the pieces' characters (the `sentencepiece`
    library's offsets: the same, but where that op orders tied pieces differently and the
    normalizer changed them, e.g. full-width `＝`, where the default pipeline gives the op
    pieces' whole spans). It needs a model whose every piece's characters are pieces of
    their own, without user-defined or byte pieces (`ValueError` otherwise), as ALBERT's
    are. `inputs[i][start:end]` (in bytes) holds the input characters the piece comes from:
    a piece that starts with `▁` from its word's first character (the spaces before it
    belong to no piece; a lone `▁` is an empty span where the word starts), a character
    whose preprocessing gives several characters (`ﬁ`) whole, characters that preprocessing
    removes (combining accents, the second quote of a pair) with the piece before them. A
    `▁` piece that stands for the start of the text is an empty span where the first
    character starts.

    Args:
        model: path to a SentencePiece model (`spiece.model`) or its bytes. The config
            stores the bytes (base64); a `.keras` file holds them as the asset
            `spiece.model` instead (see `text.vocabulary.assets`). None: no model until
            `load_assets` reads one.
        lower_case: lower-case the text (`str.lower`), as uncased ALBERT models do.
        keep_accents: keep accents (no NFKD, no stripping of combining characters).
        tflite_compatible: tokenize with ops that convert to TFLite (builtins and tf.text
            ops that its TFLite registrar resolves), `tokenize_with_offsets` included (its
            tables are built from the model on its first call).
        max_text_bytes: tokenize only this many first bytes of each text, cut at a
            UTF-8 character boundary (offsets still index the whole text); None: all.
            The TFLite-compatible pipeline keeps that many bytes right after splitting
            the text into bytes, so one long text cannot take an app's memory.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    A unigram model of a few pieces after ALBERT's special ones (models come from
    `spm_train` or `kbc vocab --kind sentencepiece`):

    >>> from sentencepiece import sentencepiece_model_pb2
    >>> proto = sentencepiece_model_pb2.ModelProto()
    >>> for piece in ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]:
    ...     kind = "UNKNOWN" if piece == "<unk>" else "CONTROL"
    ...     _ = proto.pieces.add(piece=piece, score=0.0, type=kind)
    >>> for piece, score in [("▁the", -1.0), ("▁quick", -2.0), ("▁fox", -2.0), ("▁", -3.0),
    ...                      ("s", -3.0), (".", -3.0)]:
    ...     _ = proto.pieces.add(piece=piece, score=score)
    >>> proto.trainer_spec.unk_id, proto.trainer_spec.pad_id = 1, 0
    >>> proto.trainer_spec.bos_id = proto.trainer_spec.eos_id = -1
    >>> proto.normalizer_spec.name = "identity"
    >>> model = proto.SerializeToString()
    >>> tokenizer = SentencePieceTokenizer(model)
    >>> tokenizer(["The  QUICK fox.", "Foxes"]).to_list()
    [[5, 6, 7, 10], [7, 1, 9]]
    >>> [tokenizer.id_to_token(i) for i in tokenizer("the fox")]
    ['▁the', '▁fox']
    >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["The  QUICK fox."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 5, 11, 14]], [[3, 10, 14, 15]])
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'the quick fox.']
    >>> SentencePieceTokenizer(model, tflite_compatible=True)(["The  QUICK fox."]).to_list()
    [[5, 6, 7, 10]]
    """

    # ALBERT's.
    SPECIAL_TOKENS = {"cls": "[CLS]", "sep": "[SEP]", "pad": "<pad>", "mask": "[MASK]",
                      "unk": "<unk>"}
    vocabulary_kind = SENTENCEPIECE
    # What a subclass of another family changes: its model's file name, tokens it adds
    # after the model's pieces, and whether `` and '' read as ".
    MODEL_FILE = "spiece.model"
    ADDED_TOKENS = ()
    REPLACES_QUOTES = True

    def __init__(self, model, lower_case=True, keep_accents=False, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        super().__init__(**kwargs)
        self.lower_case = bool(lower_case)
        self.keep_accents = bool(keep_accents)
        self.tflite_compatible = bool(tflite_compatible)
        check_max_text_bytes(max_text_bytes)
        self.max_text_bytes = max_text_bytes
        self.model = None
        if model is not None:
            self._set_vocabulary(model)

    @property
    def has_vocabulary(self):
        return self.model is not None

    def _set_vocabulary(self, model):
        self.model = _read_model(model)
        tokenized = self._model_to_tokenize(self.model)
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            sentencepiece = _sentencepiece_op_tokenizer(tokenized)
            self._pieces = [p.decode("utf-8") for p in sentencepiece.id_to_string(
                tf.range(sentencepiece.vocab_size())).numpy().tolist()]
            self._pieces += [token for token in self.ADDED_TOKENS if token not in self._pieces]
            self._piece_ids = {piece: i for i, piece in enumerate(self._pieces)}
            self._preprocessing = self._text_preprocessing()
            self._fast_sentencepiece = tf_text.FastSentencepieceTokenizer(tokenized)
            if self.tflite_compatible:
                chars = {c for piece in self._pieces for c in piece}
                nul_stand_in = next(c for c in range(0xE000, 0xF900) if chr(c) not in chars)
                self._speller = ByteSpeller(nul_stand_in)
            else:  # the TFLite-compatible pipeline's offsets come from `TfliteOffsets`
                self._piece_offsets = PieceOffsets(
                    self._pieces, SentencePieceProcessor(model_proto=tokenized).unk_id())

    def _model_to_tokenize(self, model):
        """The serialized model the ops tokenize with: the model itself (ALBERT's
        normalizer runs inside them)."""
        return model

    def _text_preprocessing(self):
        """What the text goes through before the model's own normalizer: ALBERT's
        preprocessing (a subclass for a model that reads raw text returns `RawText()`)."""
        return AlbertPreprocessing(self.lower_case, self.keep_accents, self.REPLACES_QUOTES)

    # Vocabulary lookups (Python side).
    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self._pieces)

    @staticmethod
    def continues_word(token):
        """Whether `token` continues the word of the token before it: SentencePiece marks
        a word's first piece with `▁` (U+2581)."""
        return not token.startswith("\u2581")

    def token_to_id(self, token):
        self._check_vocabulary()
        if token not in self._piece_ids:
            raise KeyError(f"Token {token!r} is not in the SentencePiece model.")
        return self._piece_ids[token]

    def id_to_token(self, token_id):
        self._check_vocabulary()
        token_id = int(token_id)
        if not 0 <= token_id < len(self._pieces):
            raise KeyError(f"Id {token_id} is outside the model's {len(self._pieces)} pieces.")
        return self._pieces[token_id]

    def _tokenize(self, text, with_offsets):
        """`(ids,)` or `(ids, starts, ends)` of a batch of texts: the ids of the fast op on
        the preprocessed texts, and their offsets (see Offsets in the class docstring)."""
        if not with_offsets:
            out_chars, _, out_splits = self._preprocessing(self._characters_of(text))
            ids = self._fast_sentencepiece.tokenize(self._spelled(out_chars, out_splits))
            if not self.tflite_compatible:
                ids = ids.with_row_splits_dtype(tf.int64)  # as tf.text's other tokenizers give
            return (ids,)
        chars = self._characters_of(text)
        out_chars, sources, out_splits, span_ends = self._preprocessing(chars, with_spans=True)
        spelled = self._spelled(out_chars, out_splits)
        ids = self._fast_sentencepiece.tokenize(spelled).with_row_splits_dtype(tf.int64)
        if self.tflite_compatible:
            if not hasattr(self, "_tflite_offsets"):
                with tf.init_scope():  # tables built eagerly, once, from the model
                    self._tflite_offsets = TfliteOffsets(
                        self._model_to_tokenize(self.model),
                        self._preprocessing.albert_settings, self._speller.nul_stand_in)
            starts, ends = self._tflite_offsets(chars, out_chars, sources, out_splits,
                                                span_ends, ids)
        else:
            starts, ends = self._op_offsets(chars, out_chars, sources, out_splits, span_ends,
                                            spelled, ids)
        return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)

    def _op_offsets(self, chars, out_chars, sources, out_splits, span_ends, spelled, ids):
        """Flat int64 `(starts, ends)` of the pieces `ids` in the input texts, placed with
        `SentencepieceTokenizeWithOffsetsOp`'s offsets in the `spelled` texts."""
        starts, ends = self._piece_offsets(
            spelled, ids, *self._sentencepiece_op().tokenize_with_offsets(spelled))
        # A word's first piece (`▁word`) starts at the space before the word; answers and
        # tagged words start at the word (the space is one byte after preprocessing).
        piece_text = tf.gather(spelled, ids.value_rowids())
        first_byte = tf.strings.substr(piece_text, starts, tf.ones_like(starts))
        before_word = tf.equal(first_byte, " ")
        starts = tf.where(before_word & (starts < ends), starts + 1, starts)
        return input_offsets(chars, span_ends, out_chars, sources, out_splits,
                              ids.with_flat_values(starts), ids.with_flat_values(ends))

    def _characters_of(self, text):
        """The characters of `text` (its first `max_text_bytes` bytes), decoded with the
        ops of the layer's pipeline."""
        if self.tflite_compatible:
            return tflite_characters(text, self.max_text_bytes)
        return characters(cut_texts(text, self.max_text_bytes))

    def _spelled(self, out_chars, out_splits):
        """The preprocessed texts as strings, spelled with the ops of the layer's pipeline."""
        if self.tflite_compatible:
            return self._speller(out_chars, out_splits)
        return spell(out_chars, out_splits)

    def detokenize(self, token_ids):
        """The preprocessed text back (lower case, without accents, as the model reads it):
        pieces joined, `▁` as spaces, unknown pieces as ` ⁇ `, control pieces as nothing.

        Args:
            token_ids: int ragged [batch, (pieces)] or dense [batch, pieces] ids, or a 1-D
                tensor of one text's ids.

        Returns:
            string tensor [batch] (or a scalar for 1-D ids).
        """
        self._check_vocabulary()
        if not isinstance(token_ids, tf.RaggedTensor):
            token_ids = tf.convert_to_tensor(token_ids)
            if token_ids.shape.rank == 1:
                return self.detokenize(tf.expand_dims(token_ids, 0))[0]
            token_ids = tf.RaggedTensor.from_tensor(token_ids)
        token_ids = self._model_ids(tf.cast(token_ids, tf.int32))
        if self.tflite_compatible:
            return self._fast_sentencepiece.detokenize(token_ids)
        return self._sentencepiece_op().detokenize(token_ids)

    def _model_ids(self, token_ids):
        """The model's ids of the layer's ids (a subclass with ids of its own maps them)."""
        return token_ids

    def _sentencepiece_op(self):
        """tf.text's `SentencepieceOp` tokenizer, which the layer holds (and a SavedModel then
        tracks) only from its first use on: a model that only tokenizes needs neither its
        resource nor a second copy of the model, and a TFLite converter cannot take it."""
        if not hasattr(self, "_sentencepiece"):
            self._sentencepiece = _sentencepiece_op_tokenizer(
                self._model_to_tokenize(self.model))
        return self._sentencepiece

    def get_config(self):
        config = super().get_config()
        config.update({
            # A `.keras` file holds it as an asset (see `text.vocabulary.assets`).
            "model": (base64.b64encode(self.model).decode("ascii")
                      if self.config_holds_vocabulary else None),
            "lower_case": self.lower_case,
            "keep_accents": self.keep_accents,
            "tflite_compatible": self.tflite_compatible,
            "max_text_bytes": self.max_text_bytes,
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("model"), str):
            config["model"] = base64.b64decode(config["model"])
        return cls(**config)
