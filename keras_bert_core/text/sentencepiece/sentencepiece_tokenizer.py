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
(``_PieceOffsets``); that op has no TFLite kernel, so the TFLite-compatible pipeline replays
the model's normalizer and pieces on character counts instead (``_TfliteOffsets``, tables
from the model's ``precompiled_charsmap``): the ``sentencepiece`` library's own offsets,
which the default pipeline's equal but where the op orders tied pieces differently.

Invalid UTF-8 reads as U+FFFD (which ``nmt_nfkc`` removes). Special tokens are never
produced from text: ``"[CLS]"`` in a text is tokenized as its characters.
"""

import base64
import functools
import os
import struct
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2

from keras_bert_core import tensorflow_internals
from keras_bert_core.text.character_table import BLOCK_SIZE, NUM_CODE_POINTS
from keras_bert_core.text.special_tokens import SpecialTokenIds
from keras_bert_core.text.string_batches import (
    as_batch,
    check_max_text_bytes,
    cut_texts,
    keep_static_batch_size,
)
from keras_bert_core.text.tflite_tokenization import _positions, _shift, _utf8_bytes, row_ids
from keras_bert_core.text.vocabulary.assets import VocabularyAssets

# What ALBERT's preprocessing does with a character (the table's low 3 bits).
_SAME, _MAPPED, _SPACE, _BACKTICK, _APOSTROPHE, _SIGMA = range(6)
# What the final-sigma rule sees at each end of a character's output (2 bits each): nothing
# (empty or case-ignorable only), a cased character, or another one.
_IGNORED, _CASED, _UNCASED = range(3)
_KIND_BITS, _CLASS_BITS = 8, 4
_SPELLING_UNIT = _KIND_BITS * _CLASS_BITS * _CLASS_BITS
_SPACE_CHAR, _QUOTE_CHAR, _SMALL_SIGMA, _FINAL_SIGMA = 0x20, 0x22, 0x3C3, 0x3C2
_REPLACEMENT_CHAR = 0xFFFD
# Piece types of sentencepiece_model.proto.
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _BYTE = 1, 2, 3, 4, 6


def _case_properties(chars):
    """`(case_ignorable, cased)` of each character, as Python's `str.lower` sees them for
    the final-sigma rule (not exposed otherwise): a case-ignorable character after "AΣ" is
    skipped, so the sigma is final before a following "|" and not before an "A"."""
    ignorable, cased = {}, {}
    for c in chars:
        lowered_before_bar = ("AΣ" + c + "|").lower()[1]
        lowered_before_a = ("AΣ" + c + "A").lower()[1]
        ignorable[c] = lowered_before_bar == "ς" and lowered_before_a == "σ"
        cased[c] = lowered_before_bar == "σ"
    return ignorable, cased


def _end_class(chars, ignorable, cased):
    for c in chars:
        if not ignorable[c]:
            return _CASED if cased[c] else _UNCASED
    return _IGNORED


@functools.lru_cache(maxsize=4)
def albert_character_table(lower_case, keep_accents):
    """ALBERT's preprocessing of every code point, from Python's `unicodedata`.

    Returns:
        `(block_of, entries, spelling_splits, spelling_values)`, int32 arrays. For a code
        point `c`, element `block_of[c // BLOCK_SIZE] * BLOCK_SIZE + c % BLOCK_SIZE` of
        `entries` is `kind + 8 * (left + 4 * right) + 128 * spelling`: what happens to it
        (`_SAME`: itself; `_MAPPED`: the code points
        `spelling_values[spelling_splits[spelling]:spelling_splits[spelling + 1]]`, maybe
        none; `_SPACE`; a quote; `_SIGMA`: σ or ς) and, lower-casing, the final-sigma class
        of its output's first and last characters.
    """
    kinds = np.full(NUM_CODE_POINTS, _SAME, np.int32)
    classes = np.full(NUM_CODE_POINTS, _UNCASED * (1 + _CLASS_BITS), np.int32)
    spelling = np.zeros(NUM_CODE_POINTS, np.int32)
    # Unassigned, private-use and surrogate code points: themselves, uncased (the default).
    assigned = [chr(c) for c in range(NUM_CODE_POINTS)
                if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")]
    ignorable, cased = _case_properties(assigned) if lower_case else ({}, {})
    spellings = {(): 0}
    for c in assigned:
        code = ord(c)
        if c.isspace():
            kinds[code] = _SPACE
            continue
        if c in "`'":
            kinds[code] = _BACKTICK if c == "`" else _APOSTROPHE
            classes[code] = _IGNORED  # case-ignorable, unless paired (set in the graph)
            continue
        text = c
        if not keep_accents:
            text = "".join(x for x in unicodedata.normalize("NFKD", c)
                           if not unicodedata.combining(x))
        if lower_case:
            classes[code] = (_end_class(text, ignorable, cased) + _CLASS_BITS
                             * _end_class(reversed(text), ignorable, cased))
            if text == "Σ":
                kinds[code] = _SIGMA
                continue
            # An output that holds Σ among other characters (none in Unicode 14) takes the
            # sigma that it gives on its own.
            text = text.lower()
        if text != c:
            kinds[code] = _MAPPED
            spelling[code] = spellings.setdefault(tuple(map(ord, text)), len(spellings))
    entries = kinds + _KIND_BITS * classes + _SPELLING_UNIT * spelling
    blocks, block_of = np.unique(entries.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    values = [code for chars in spellings for code in chars]
    splits = np.cumsum([0] + [len(chars) for chars in spellings])
    return (block_of.astype(np.int32).ravel(), blocks.astype(np.int32).ravel(),
            splits.astype(np.int32), np.array(values or [0], np.int32))


def unigram_model_proto(pieces):
    """A SentencePiece unigram model (serialized `ModelProto` bytes) with ALBERT's special
    pieces (`<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`, ids 0-4), then `pieces`, a list of
    `(piece, score)` pairs. No character normalization (only the dummy prefix and the
    whitespace handling); for examples and tests, real models come from `spm_train`."""

    def varint(value):
        value &= (1 << 64) - 1
        out = bytearray()
        while True:
            out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
            value >>= 7
            if not value:
                return bytes(out)

    def field(number, payload):  # length-delimited
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    def number(field_number, value):
        return varint(field_number << 3) + varint(value)

    specials = [("<pad>", 0.0, _CONTROL), ("<unk>", 0.0, _UNKNOWN), ("[CLS]", 0.0, _CONTROL),
                ("[SEP]", 0.0, _CONTROL), ("[MASK]", 0.0, _CONTROL)]
    proto = b"".join(
        field(1, field(1, piece.encode("utf-8")) + varint(2 << 3 | 5)
              + struct.pack("<f", score) + number(3, kind))
        for piece, score, kind in specials + [(p, s, _NORMAL) for p, s in pieces])
    # Trainer spec: unigram; unk 1, no bos/eos, pad 0. Normalizer spec: identity.
    proto += field(2, number(3, 1) + number(40, 1) + number(41, -1) + number(42, -1)
                   + number(43, 0))
    return proto + field(3, field(1, b"identity"))


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
class SentencePieceTokenizer(VocabularyAssets, SpecialTokenIds, keras.layers.Layer):
    """SentencePiece tokenizer with ALBERT's preprocessing, inside the TensorFlow graph.

    Strings go in, piece ids come out: in a `tf.data` pipeline, in a `tf.function`, in an
    exported SavedModel (TF Serving) and, with `tflite_compatible=True`, in a TFLite model.
    The ids are those of the `sentencepiece` library on the text as ALBERT preprocesses it:
    whitespace runs collapsed, ```` `` ```` and `''` read as `"`, accents stripped (NFKD
    without combining characters) unless `keep_accents`, lower case if `lower_case`, on
    both pipelines and with or without offsets. Special tokens are never produced from
    text; add them with a packer.

    Args:
        model: path to a SentencePiece model (`spiece.model`) or its bytes. The config
            stores the bytes (base64); a `.keras` file holds them as the asset
            `spiece.model` instead (see `vocabulary_assets`). None: no model until
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
    >>> model = unigram_model_proto([("▁the", -1.0), ("▁quick", -2.0), ("▁fox", -2.0),
    ...                              ("▁", -3.0), ("s", -3.0), (".", -3.0)])
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

    def __init__(self, model, lower_case=True, keep_accents=False, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # Strings go in as they are (Keras would cast inputs to the layer dtype).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.lower_case = bool(lower_case)
        self.keep_accents = bool(keep_accents)
        self.tflite_compatible = bool(tflite_compatible)
        check_max_text_bytes(max_text_bytes)
        self.max_text_bytes = max_text_bytes
        self.model = None
        if model is not None:
            self._set_vocabulary(model)
        self.built = True

    @property
    def has_vocabulary(self):
        return self.model is not None

    def _set_vocabulary(self, model):
        self.model = _read_model(model)
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            sentencepiece = _sentencepiece_op_tokenizer(self.model)
            self._pieces = [p.decode("utf-8") for p in sentencepiece.id_to_string(
                tf.range(sentencepiece.vocab_size())).numpy().tolist()]
            self._piece_ids = {piece: i for i, piece in enumerate(self._pieces)}
            self._preprocessing = _AlbertPreprocessing(self.lower_case, self.keep_accents)
            self._fast_sentencepiece = tf_text.FastSentencepieceTokenizer(self.model)
            if self.tflite_compatible:
                chars = {c for piece in self._pieces for c in piece}
                nul_stand_in = next(c for c in range(0xE000, 0xF900) if chr(c) not in chars)
                self._speller = _ByteSpeller(nul_stand_in)
            else:  # the TFLite-compatible pipeline's offsets come from `_TfliteOffsets`
                self._piece_offsets = _PieceOffsets(
                    self._pieces, SentencePieceProcessor(model_proto=self.model).unk_id())

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






    def call(self, inputs):
        """Tokenizes strings.

        Args:
            inputs: a string, a list of strings or a string tensor of rank 0 or 1.

        Returns:
            int32 `tf.RaggedTensor` [batch, (pieces)] for a batch, or an int32 `tf.Tensor`
            [pieces] for a single string.
        """
        self._check_vocabulary()
        text, single = as_batch(inputs)
        out_chars, _, out_splits = self._preprocessing(self._characters_of(text))
        ids = self._fast_sentencepiece.tokenize(self._spelled(out_chars, out_splits))
        if not self.tflite_compatible:
            ids = ids.with_row_splits_dtype(tf.int64)  # as tf.text's other tokenizers give
        keep_static_batch_size(ids, text)
        return ids[0] if single else ids

    def tokenize_with_offsets(self, inputs):
        """Tokenizes strings and locates every piece in its input string.

        The ids of `call`. The default pipeline places them with the offsets of tf.text's
        `SentencepieceTokenizeWithOffsetsOp` (the fast op gives none); the TFLite-compatible
        one counts the model normalizer's units and the pieces' characters (the
        `sentencepiece` library's offsets: the same, but where that op orders tied pieces
        differently and the normalizer changed them, e.g. full-width `＝`, where the
        default pipeline gives the op pieces' whole spans). It needs a model whose every
        piece's characters are pieces of their own, without user-defined or byte pieces
        (`ValueError` otherwise), as ALBERT's are.

        Args:
            inputs: a list of strings or a 1-D string tensor.

        Returns:
            `(token_ids, start_offsets, end_offsets)`: ragged [batch, (pieces)] tensors of
            int32, int64, int64. `inputs[i][start:end]` (in bytes) holds the input
            characters the piece comes from: a piece that starts with `▁` from its word's
            first character (the spaces before it belong to no piece; a lone `▁` is an
            empty span where the word starts), a character whose preprocessing gives several
            characters
            (`ﬁ`) whole, characters that preprocessing removes (combining accents, the
            second quote of a pair) with the piece before them. A `▁` piece that stands
            for the start of the text is an empty span where the first character starts.
        """
        self._check_vocabulary()
        text, single = as_batch(inputs)
        if single:
            raise ValueError("tokenize_with_offsets takes a batch (list or 1-D tensor) of strings.")
        chars = self._characters_of(text)
        out_chars, sources, out_splits, span_ends = self._preprocessing(chars, with_spans=True)
        spelled = self._spelled(out_chars, out_splits)
        ids = self._fast_sentencepiece.tokenize(spelled).with_row_splits_dtype(tf.int64)
        if self.tflite_compatible:
            if not hasattr(self, "_tflite_offsets"):
                with tf.init_scope():  # tables built eagerly, once, from the model
                    self._tflite_offsets = _TfliteOffsets(self.model, self.lower_case,
                                                          self.keep_accents,
                                                          self._speller.nul_stand_in)
            starts, ends = self._tflite_offsets(chars, out_chars, sources, out_splits,
                                                span_ends, ids)
        else:
            starts, ends = self._op_offsets(chars, out_chars, sources, out_splits, span_ends,
                                            spelled, ids)
        outputs = (ids, ids.with_flat_values(starts), ids.with_flat_values(ends))
        for x in outputs:
            keep_static_batch_size(x, text)
        return outputs

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
        return _input_offsets(chars, span_ends, out_chars, sources, out_splits,
                              ids.with_flat_values(starts), ids.with_flat_values(ends))

    def _characters_of(self, text):
        """The characters of `text` (its first `max_text_bytes` bytes), decoded with the
        ops of the layer's pipeline."""
        if self.tflite_compatible:
            return _tflite_characters(text, self.max_text_bytes)
        return _characters(cut_texts(text, self.max_text_bytes))

    def _spelled(self, out_chars, out_splits):
        """The preprocessed texts as strings, spelled with the ops of the layer's pipeline."""
        if self.tflite_compatible:
            return self._speller(out_chars, out_splits)
        return _spell(out_chars, out_splits)

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
        token_ids = tf.cast(token_ids, tf.int32)
        if self.tflite_compatible:
            return self._fast_sentencepiece.detokenize(token_ids)
        return self._sentencepiece_op().detokenize(token_ids)

    def _sentencepiece_op(self):
        """tf.text's `SentencepieceOp` tokenizer, which the layer holds (and a SavedModel then
        tracks) only from its first use on: a model that only tokenizes needs neither its
        resource nor a second copy of the model, and a TFLite converter cannot take it."""
        if not hasattr(self, "_sentencepiece"):
            self._sentencepiece = _sentencepiece_op_tokenizer(self.model)
        return self._sentencepiece

    def get_config(self):
        config = super().get_config()
        config.update({
            # A `.keras` file holds it as an asset (see `vocabulary_assets`).
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


class _Characters:
    """The characters of a batch of texts, flat, in row order (int32 [chars] each): code
    point (U+FFFD for invalid bytes), row and byte start in its text, with the row splits
    [rows + 1] and each text's length in bytes [rows]."""

    def __init__(self, code_points, rows, starts, row_splits, text_lengths):
        self.code_points, self.rows, self.starts = code_points, rows, starts
        self.row_splits, self.text_lengths = row_splits, text_lengths


def _characters(text):
    """The characters of `text` with TensorFlow core ops."""
    code_points, starts = tf.strings.unicode_decode_with_offsets(
        text, "UTF-8", errors="replace", replacement_char=_REPLACEMENT_CHAR)
    return _Characters(code_points.flat_values, tf.cast(code_points.value_rowids(), tf.int32),
                       tf.cast(starts.flat_values, tf.int32),
                       tf.cast(code_points.row_splits, tf.int32), tf.strings.length(text))


def _tflite_characters(text, max_bytes=None):
    """The characters of `text` with TFLite builtins (and tf.text's byte split): every
    valid UTF-8 character, and every byte that is in none as a U+FFFD. With `max_bytes`,
    of what `cut_texts` keeps of each text."""
    code_points, lengths, byte_rows, _, byte_splits = _utf8_bytes(text, max_bytes)
    covered = tf.zeros_like(lengths, tf.bool)
    for k in (1, 2, 3):  # inside a valid character that starts k bytes before
        covered |= _shift(lengths, -k, fill=0) > k
    starts_char = (lengths > 0) | ~covered
    positions = _positions(starts_char)
    valid = tf.gather(lengths, positions) > 0
    row_starts = tf.gather(byte_splits, tf.gather(byte_rows, positions))
    chars_before = tf.pad(tf.cumsum(tf.cast(starts_char, tf.int32)), [[1, 0]])
    return _Characters(
        tf.where(valid, tf.gather(code_points, positions), _REPLACEMENT_CHAR),
        tf.gather(byte_rows, positions), positions - row_starts,
        tf.gather(chars_before, byte_splits), byte_splits[1:] - byte_splits[:-1])


class _AlbertPreprocessing(tf.Module):
    """ALBERT's preprocessing of flat characters, with index arithmetic that TFLite's
    builtins have. Called on `_Characters`, it returns the preprocessed texts' code points
    (flat int32), the character each comes from and their row splits; `with_spans` adds,
    per character, the byte offset in its text where the input span of its output ends."""

    def __init__(self, lower_case, keep_accents):
        super().__init__()
        self._lower_case = lower_case
        block_of, entries, splits, values = albert_character_table(lower_case, keep_accents)
        self._block_of = tf.constant(block_of)
        self._entries = tf.constant(entries)
        self._spelling_splits = tf.constant(splits)
        self._spelling_lengths = tf.constant(splits[1:] - splits[:-1])
        self._spelling_values = tf.constant(values)

    def __call__(self, chars, with_spans=False):
        code_points, rows = chars.code_points, chars.rows
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // BLOCK_SIZE)
                          * BLOCK_SIZE + code_points % BLOCK_SIZE)
        kind = entry % _KIND_BITS
        after_same_row = _shift(rows, -1, fill=-1) == rows
        # A whitespace run becomes one space, unless it starts or ends its text.
        space = kind == _SPACE
        text_chars = tf.pad(tf.cumsum(tf.cast(~space, tf.int32)), [[1, 0]])
        before = tf.slice(text_chars, [0], tf.shape(kind))
        kept_space = (space & ~(_shift(space, -1, fill=False) & after_same_row)
                      & (before > tf.gather(text_chars, tf.gather(chars.row_splits, rows)))
                      & (tf.gather(text_chars, tf.gather(chars.row_splits, rows + 1)) > before))
        # In a run of equal quotes, pairs from the left become one '"'.
        quote = (kind == _BACKTICK) | (kind == _APOSTROPHE)
        continues = quote & (_shift(kind, -1, fill=-1) == kind) & after_same_row
        run_start = quote & ~continues
        run = tf.maximum(tf.cumsum(tf.cast(run_start, tf.int32)) - 1, 0)
        in_run = tf.range(tf.size(kind)) - tf.gather(
            tf.pad(_positions(run_start), [[0, 1]]), run)
        second = continues & (in_run % 2 == 1)
        first = quote & (in_run % 2 == 0) & _shift(continues, 1, fill=False)

        single = tf.where(kept_space, _SPACE_CHAR, code_points)
        single = tf.where(first, _QUOTE_CHAR, single)
        if self._lower_case:
            final = _final_sigma(entry, rows, first, second)
            single = tf.where(kind == _SIGMA, tf.where(final, _FINAL_SIGMA, _SMALL_SIGMA),
                              single)
        spelling = entry // _SPELLING_UNIT
        mapped = kind == _MAPPED
        counts = tf.where(mapped, tf.gather(self._spelling_lengths, spelling), 1)
        counts = tf.where((space & ~kept_space) | second, 0, counts)
        splits = tf.pad(tf.cumsum(counts), [[1, 0]])
        sources = row_ids(splits)
        within = tf.range(tf.size(sources)) - tf.gather(splits, sources)
        spelled = tf.gather(self._spelling_values, tf.gather(
            self._spelling_splits, tf.gather(spelling, sources)) + within)
        out_chars = tf.where(tf.gather(mapped, sources), spelled, tf.gather(single, sources))
        outputs = (out_chars, sources, tf.gather(splits, chars.row_splits))
        if not with_spans:
            return outputs
        # Characters without output (removed ones, a pair's second quote) join the span of
        # the output before them; whitespace does not.
        following, exists = _nearest(space | (counts > 0), rows, after=True)
        span_ends = tf.where(exists, tf.gather(chars.starts, following),
                             tf.gather(chars.text_lengths, rows))
        return (*outputs, span_ends)


def _nearest(marked, rows, after):
    """For each position of a 1-D mask, the nearest marked position after it (`after`) or
    before it, and whether there is one in the same row."""
    marked_int = tf.cast(marked, tf.int32)
    counts = tf.cumsum(marked_int)
    index = counts if after else counts - marked_int - 1
    found = tf.gather(tf.pad(_positions(marked), [[0, 1]]), tf.maximum(index, 0))
    exists = (index >= 0) & (index < tf.reduce_sum(marked_int))
    return found, exists & (tf.gather(rows, found) == rows)


def _final_sigma(entry, rows, first, second):
    """Whether each character, if a capital sigma, is final: after a cased character and
    not before one, case-ignorable ones skipped (Python's `str.lower`)."""
    left = entry // _KIND_BITS % _CLASS_BITS
    right = entry // (_KIND_BITS * _CLASS_BITS) % _CLASS_BITS
    # A pair of quotes is an uncased '"'; its second quote is gone.
    left = tf.where(first, _UNCASED, tf.where(second, _IGNORED, left))
    right = tf.where(first, _UNCASED, tf.where(second, _IGNORED, right))
    before, has_before = _nearest(right != _IGNORED, rows, after=False)
    after, has_after = _nearest(left != _IGNORED, rows, after=True)
    return (has_before & (tf.gather(right, before) == _CASED)
            & ~(has_after & (tf.gather(left, after) == _CASED)))


def _spell(out_chars, out_splits):
    """The preprocessed texts as strings (TensorFlow core ops)."""
    return tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(out_chars, out_splits, validate=False), "UTF-8")


def _utf8_lengths(code_points):
    return (1 + tf.cast(code_points >= 0x80, tf.int32) + tf.cast(code_points >= 0x800, tf.int32)
            + tf.cast(code_points >= 0x10000, tf.int32))


class _ByteSpeller(tf.Module):
    """Spells flat code points as UTF-8 strings with TFLite builtins and tf.text's
    `FastWordpieceDetokenize`: byte b is token b - 1 at the start of a text and "##" + b
    (token 254 + b) after it. NUL, which no token can hold, is spelled as `nul_stand_in`."""

    def __init__(self, nul_stand_in):
        super().__init__()
        self.nul_stand_in = nul_stand_in
        tokens = ([bytes([b]) for b in range(1, 256)] + [b"##" + bytes([b]) for b in range(1, 256)]
                  + [b"[UNK]"])
        self._detokenizer = tf_text.FastWordpieceTokenizer(
            tokens, support_detokenization=True, no_pretokenization=True)

    def __call__(self, code_points, row_splits):
        code_points = tf.where(code_points == 0, self.nul_stand_in, code_points)
        lengths = _utf8_lengths(code_points)
        byte_splits = tf.pad(tf.cumsum(lengths), [[1, 0]])
        owner = row_ids(byte_splits)
        within = tf.range(tf.size(owner)) - tf.gather(byte_splits, owner)
        code_point, length = tf.gather(code_points, owner), tf.gather(lengths, owner)
        # The bits of a character's byte: 6 per following byte; lead bytes add a prefix.
        payload = code_point // tf.gather([1, 64, 4096, 262144], length - 1 - within)
        byte = tf.where(within == 0, tf.gather([0, 0, 0xC0, 0xE0, 0xF0], length) + payload,
                        0x80 + payload % 64)
        text_splits = tf.gather(byte_splits, row_splits)
        rows = row_ids(text_splits)
        starts_text = _shift(rows, -1, fill=-1) != rows
        tokens = tf.where(starts_text, byte - 1, 254 + byte)
        return self._detokenizer.detokenize(tf.RaggedTensor.from_row_splits(
            tokens, tf.cast(text_splits, tf.int64), validate=False))


def _input_offsets(chars, span_ends, out_chars, sources, out_splits, starts, ends):
    """Byte offsets in the input texts (flat int64) of pieces that `starts` and `ends`
    (ragged, int64) locate in the preprocessed texts (TensorFlow core ops)."""
    byte_splits = tf.pad(tf.cumsum(_utf8_lengths(out_chars)), [[1, 0]])
    text_starts = tf.gather(byte_splits, out_splits)
    rows = tf.cast(starts.value_rowids(), tf.int32)
    begin = tf.gather(text_starts, rows) + tf.cast(starts.flat_values, tf.int32)
    end = tf.gather(text_starts, rows) + tf.cast(ends.flat_values, tf.int32)
    text_end = tf.gather(text_starts, rows + 1)
    last = tf.maximum(tf.size(out_chars) - 1, 0)

    def source(byte):  # the input character whose output holds the byte
        out = tf.searchsorted(byte_splits, byte, side="right") - 1
        return tf.gather(sources, tf.clip_by_value(out, 0, last))

    return _input_span(chars, span_ends, source, begin, end, text_end)


def _input_span(chars, span_ends, source, begin, end, text_end):
    """Byte offsets in the input texts (flat int64) of spans `[begin, end)` of preprocessed
    text, whose units (bytes or characters) `source` maps to the input character whose
    output holds them; `text_end`: where each span's text ends. An empty span points where
    its unit's character starts (at the end of the text, where the last character's span
    ends: never seen)."""
    input_begin = tf.where(begin < text_end, tf.gather(chars.starts, source(begin)),
                           tf.gather(span_ends, source(text_end - 1)))
    input_end = tf.where(end > begin, tf.gather(span_ends, source(end - 1)), input_begin)
    return tf.cast(input_begin, tf.int64), tf.cast(input_end, tf.int64)


class _PieceOffsets(tf.Module):
    """Locates the pieces of `FastSentencepieceTokenize` with the offsets that tf.text's
    `SentencepieceTokenizeWithOffsetsOp` gives its own pieces (that op's older
    `sentencepiece` may order tied pieces differently; the fast op gives no offsets).

    Both ops split the same normalized text, so every piece is placed by its characters
    counted from the start of its text (an unknown piece counts as one: the two ops differ
    in the order of tied pieces, not in what is unknown). A piece boundary that is one of the
    op's takes the op's offset; one inside an op piece (only where tied pieces are ordered
    differently, e.g. `"0", "00"` against `"00", "0"`) is counted in bytes into that piece
    when the text there spells the piece (`▁` a space, or nothing for the dummy prefix), and
    otherwise (the normalizer changed it) gives the op piece's whole span."""

    def __init__(self, pieces, unk_id):
        super().__init__()
        spellings = [piece.replace("\u2581", " ") for piece in pieces]
        # One character; no boundary falls inside it, so its spelling is never compared.
        spellings[unk_id] = "\u2581"
        byte_ends = [np.cumsum([0] + [len(c.encode("utf-8")) for c in s]) for s in spellings]
        self._char_counts = tf.constant([len(s) for s in spellings], tf.int64)
        self._byte_ends = tf.constant(np.concatenate(byte_ends), tf.int64)
        self._byte_ends_splits = tf.constant(
            np.cumsum([0] + [len(ends) for ends in byte_ends])[:-1], tf.int64)
        self._spellings = tf.constant(spellings)

    def _char_spans(self, ids):
        """Row, and first and last character + 1 in its normalized text, of each piece,
        as sortable keys `row * 2**32 + character`."""
        lengths = tf.gather(self._char_counts, ids.flat_values)
        ends = tf.cumsum(lengths)
        rows = tf.cast(ids.value_rowids(), tf.int64)
        row_start = tf.gather(tf.pad(ends, [[1, 0]]),
                              tf.gather(tf.cast(ids.row_splits, tf.int64), rows))
        row_key = rows * 2**32 - row_start
        return rows, row_key + ends - lengths, row_key + ends

    def __call__(self, spelled, ids, op_ids, op_starts, op_ends):
        """Flat int64 byte offsets `(starts, ends)` in `spelled` of the pieces `ids`, from the
        op's `op_ids`, `op_starts` and `op_ends` (ragged, same rows)."""
        rows, begin_keys, end_keys = self._char_spans(ids)
        _, op_begin_keys, op_end_keys = self._char_spans(op_ids)
        # One sentinel op piece keeps the gathers valid where a text has none.
        op_begin_keys, op_end_keys = (tf.pad(k, [[0, 1]], constant_values=-1)
                                      for k in (op_begin_keys, op_end_keys))
        op_ids, op_starts, op_ends = (tf.pad(tf.cast(x.flat_values, tf.int64), [[0, 1]])
                                      for x in (op_ids, op_starts, op_ends))
        last = tf.size(op_ids, out_type=tf.int64) - 1
        text = tf.gather(spelled, rows)
        text_length = tf.cast(tf.strings.length(text), tf.int64)

        def locate(keys, op_index, op_keys, op_offsets):
            """Offsets of piece boundaries `keys`, in or at the end of op piece `op_index`."""
            op_index = tf.clip_by_value(op_index, 0, last)
            piece, start, end, offset = (tf.gather(x, op_index)
                                         for x in (op_ids, op_starts, op_ends, op_offsets))
            # Within the text, should the two ops ever split it differently.
            end = tf.minimum(end, text_length)
            start = tf.minimum(start, end)
            count = tf.gather(self._char_counts, piece)
            within = tf.clip_by_value(keys - tf.gather(op_begin_keys, op_index), 0, count)
            first = tf.gather(self._byte_ends_splits, piece)
            into, length = (tf.gather(self._byte_ends, first + n) for n in (within, count))
            spelling = tf.gather(self._spellings, piece)
            in_text = tf.strings.substr(text, start, end - start)
            # `▁x` spelled as "x": the dummy prefix at the start of a text.
            after_prefix = (tf.strings.substr(spelling, 0, 1) == " ") & (
                in_text == tf.strings.substr(spelling, tf.ones_like(length), length - 1))
            counted = tf.where(in_text == spelling, start + into,
                               tf.where(after_prefix, tf.maximum(start + into - 1, start), offset))
            return tf.where(tf.gather(op_keys, op_index) == keys, offset, counted)

        starts = locate(begin_keys, tf.searchsorted(op_begin_keys[:-1], begin_keys,
                                                    side="right", out_type=tf.int64) - 1,
                        op_begin_keys, op_starts)
        ends = locate(end_keys, tf.searchsorted(op_end_keys[:-1], end_keys, side="left",
                                                out_type=tf.int64),
                      op_end_keys, op_ends)
        return starts, ends


# What the model's normalizer makes of the text, per output character, as the TFLite route's
# offsets need it: a space (which the normalizer's whitespace rules see) and a character that
# is in no piece of its own (runs of them are one unknown piece).
_SPACE_BIT, _UNKNOWN_BIT = 1, 2
_CODE_POINT_RANGE = NUM_CODE_POINTS  # multiplier that packs a prefix id and a code point


def charsmap_rules(charsmap):
    """The rules of a SentencePiece `precompiled_charsmap`: `{input code points: output}`.

    The blob is a darts-clone double array (a DAWG: subtrees are shared) whose keys are
    UTF-8 byte strings and whose values point into NUL-terminated outputs after it; the
    normalizer replaces the longest key that starts the rest of the text (a character that
    starts none is copied). Walked level by level with numpy.
    """
    if not charsmap:
        return {}
    size = struct.unpack("<I", charsmap[:4])[0]
    units = np.frombuffer(charsmap[4:4 + size], "<u4").astype(np.int64)
    outputs = charsmap[4 + size:]
    base = np.arange(units.size) ^ ((units >> 10) << ((units & 512) >> 6))
    label = units & 0xFF
    # Unit j is the child `label[j]` of every node whose base is j ^ label[j].
    child = np.flatnonzero(((units >> 31) == 0) & (label != 0))
    parent_base = child ^ label[child]
    order = np.argsort(parent_base, kind="stable")
    child, parent_base = child[order], parent_base[order]
    levels = [(np.array([0]), None)]  # (nodes, index of each one's parent one level up)
    while levels[-1][0].size:
        nodes = levels[-1][0]
        first = np.searchsorted(parent_base, base[nodes], "left")
        counts = np.searchsorted(parent_base, base[nodes], "right") - first
        parent = np.repeat(np.arange(nodes.size), counts)
        within = np.arange(parent.size) - np.repeat(np.cumsum(counts) - counts, counts)
        levels.append((child[first[parent] + within], parent))
    rules = {}
    for depth in range(1, len(levels)):
        nodes = levels[depth][0]
        leaves = np.flatnonzero((units[nodes] >> 8) & 1)
        keys = np.zeros((leaves.size, depth), np.uint8)
        at = leaves
        for d in range(depth, 0, -1):
            keys[:, d - 1] = label[levels[d][0][at]]
            at = levels[d][1][at]
        for key, value in zip(keys, (units[base[nodes[leaves]]] & 0x7FFFFFFF).tolist(),
                              strict=True):
            output = outputs[value:outputs.index(b"\0", value)]
            rules[tuple(map(ord, key.tobytes().decode("utf-8")))] = output.decode("utf-8")
    return rules


def _albert_output_chars(lower_case, keep_accents):
    """The code points that ALBERT's preprocessing can put in a text."""
    block_of, entries, _, values = albert_character_table(lower_case, keep_accents)
    code_points = np.arange(NUM_CODE_POINTS)
    kinds = entries[block_of[code_points // BLOCK_SIZE] * BLOCK_SIZE
                    + code_points % BLOCK_SIZE] % _KIND_BITS
    kept = np.flatnonzero((kinds == _SAME) | (kinds == _BACKTICK) | (kinds == _APOSTROPHE))
    return set(kept.tolist()) | set(values.tolist()) | {
        _SPACE_CHAR, _QUOTE_CHAR, _SMALL_SIGMA, _FINAL_SIGMA}


@functools.lru_cache(maxsize=4)
def normalizer_tables(model, lower_case, keep_accents, nul_stand_in):
    """What the model's normalizer does with ALBERT-preprocessed text, as arrays for the
    TFLite route's offsets (see `_TfliteOffsets`).

    Returns a dict of numpy arrays: `block_of` and `entries` (per code point, in blocks as
    `albert_character_table`: `spelling + num_spellings * first`, `first` the 1-based
    index of the code point among the first characters of the rules of several
    characters, 0 for none); `spelling_splits` and `spelling_values` (each spelling's
    output characters as `_SPACE_BIT | _UNKNOWN_BIT` classes; spelling 0 is the empty
    output); `space_spelling` (the output " ") and `space_unknown` (whether `▁` is no
    piece); `levels`, one `(keys, rule_spelling)` pair per rule length from 2 up (sorted
    int64 keys `prefix * NUM_CODE_POINTS + code point`, `prefix` the index of the shorter
    prefix one level down; the spelling of the rule that the key completes, or -1 for a
    prefix only); `piece_lengths` (characters of each piece, 1 for the unknown piece,
    whatever run of unknown characters it stands for).

    Raises:
        ValueError: a model this alignment does not cover (user-defined or byte pieces,
            other whitespace handling than ALBERT's, or a piece holding a character that
            is no piece of its own).
    """
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    kinds = {p.type for p in proto.pieces}
    if kinds & {_USER_DEFINED, _BYTE} or proto.trainer_spec.byte_fallback:
        raise ValueError("tokenize_with_offsets with tflite_compatible=True does not cover "
                         "SentencePiece models with user-defined or byte-fallback pieces; "
                         "use the default pipeline (tflite_compatible=False)")
    spec = proto.normalizer_spec
    if not (spec.add_dummy_prefix and spec.remove_extra_whitespaces
            and spec.escape_whitespaces) or proto.trainer_spec.treat_whitespace_as_suffix:
        raise ValueError("tokenize_with_offsets with tflite_compatible=True covers "
                         "SentencePiece models with ALBERT's whitespace handling only "
                         "(add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, "
                         "no treat_whitespace_as_suffix); use the default pipeline "
                         "(tflite_compatible=False)")
    singles = {p.piece.replace("\u2581", " ") for p in proto.pieces
               if p.type == _NORMAL and len(p.piece) == 1}
    spread = sorted({c for p in proto.pieces if p.type == _NORMAL
                     for c in p.piece.replace("\u2581", " ") if c not in singles})
    if spread:
        raise ValueError(f"tokenize_with_offsets with tflite_compatible=True needs every "
                         f"character of a piece to be a piece of its own; this model's "
                         f"pieces hold {spread[:5]} without it")

    def classes(text):
        return tuple((_SPACE_BIT if c == " " else 0) | (0 if c in singles else _UNKNOWN_BIT)
                     for c in text)

    spellings = {(): 0}

    def spelling_of(text):
        return spellings.setdefault(classes(text), len(spellings))

    rules = charsmap_rules(proto.normalizer_spec.precompiled_charsmap)
    allowed = _albert_output_chars(lower_case, keep_accents)
    # The text as the fast op sees it: NUL is spelled as the stand-in.
    allowed = (allowed - {0}) | {nul_stand_in}
    # A character without a rule of its own is copied: one character of its class.
    own_class = np.full(NUM_CODE_POINTS, _UNKNOWN_BIT, np.int64)
    own_class[[ord(c) for c in singles]] = 0
    own_class[_SPACE_CHAR] |= _SPACE_BIT
    class_spelling = np.zeros(_SPACE_BIT + _UNKNOWN_BIT + 1, np.int64)
    for own in np.unique(own_class).tolist():
        class_spelling[own] = spellings.setdefault((own,), len(spellings))
    spelling = class_spelling[own_class]
    for key, output in rules.items():
        if len(key) == 1:
            spelling[key[0]] = spelling_of(output)
    longer = sorted(key for key in rules if len(key) > 1 and allowed.issuperset(key))
    firsts = sorted({key[0] for key in longer})
    first = np.zeros(NUM_CODE_POINTS, np.int64)
    first[firsts] = np.arange(1, len(firsts) + 1)
    prefix_ids = {(c,): i for i, c in enumerate(firsts)}
    levels = []
    for length in range(2, max(map(len, longer), default=1) + 1):
        prefixes = sorted({key[:length] for key in longer if len(key) >= length},
                          key=lambda p: (prefix_ids[p[:-1]], p[-1]))
        keys = np.array([prefix_ids[p[:-1]] * _CODE_POINT_RANGE + p[-1] for p in prefixes],
                        np.int64)
        rule_spelling = np.array([spelling_of(rules[p]) if p in rules else -1
                                  for p in prefixes], np.int32)
        prefix_ids = {p: i for i, p in enumerate(prefixes)}
        levels.append((keys, rule_spelling))
    entries = spelling + len(spellings) * first
    blocks, block_of = np.unique(entries.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    values = [c for chars in spellings for c in chars]
    unk_id = SentencePieceProcessor(model_proto=model).unk_id()
    piece_lengths = [len(p.piece) if p.type == _NORMAL else int(i == unk_id)
                     for i, p in enumerate(proto.pieces)]
    return {
        "block_of": block_of.astype(np.int32).ravel(),
        "entries": blocks.astype(np.int32).ravel(),
        "num_spellings": len(spellings),
        "spelling_splits": np.cumsum([0] + [len(s) for s in spellings]).astype(np.int32),
        "spelling_values": np.array(values or [0], np.int32),
        "space_spelling": spellings[classes(" ")],
        "space_unknown": " " not in singles,
        "levels": levels,
        "piece_lengths": np.array(piece_lengths, np.int32),
    }


class _TfliteOffsets(tf.Module):
    """Byte offsets of the fast op's pieces in the input texts, with TFLite builtins: the
    model's normalizer and the unigram model's pieces replayed on character counts.

    The normalizer (sentencepiece's `normalizer.cc`) cuts the preprocessed text into units,
    each the longest rule that starts there (or one character), and writes each unit's
    output; every output character points at its unit's first character. Its whitespace
    rules then drop a space after a space or at the start (after the dummy prefix `▁`,
    which points at the first unit that is not a lone space) and a space at the end (the
    text then ends where that space's unit starts). The pieces cover the normalized text in
    order: a piece its own characters, an unknown piece a run of characters that are no
    pieces (every other character is one: `normalizer_tables` checks the model). So a
    piece's first and last characters, counted, give the units it starts and ends in, as
    sentencepiece's own offsets do; the preprocessing's spans then give input bytes.
    """

    def __init__(self, model, lower_case, keep_accents, nul_stand_in):
        super().__init__()
        tables = normalizer_tables(model, lower_case, keep_accents, nul_stand_in)
        self._nul_stand_in = nul_stand_in
        self._block_of = tf.constant(tables["block_of"])
        self._entries = tf.constant(tables["entries"])
        self._num_spellings = tables["num_spellings"]
        splits = tables["spelling_splits"]
        self._spelling_splits = tf.constant(splits)
        self._spelling_lengths = tf.constant(splits[1:] - splits[:-1])
        self._spelling_values = tf.constant(tables["spelling_values"])
        self._space_spelling = tables["space_spelling"]
        self._space_unknown = tables["space_unknown"]
        self._levels = [(tf.constant(keys), tf.constant(rule)) for keys, rule in tables["levels"]]
        self._piece_lengths = tf.constant(tables["piece_lengths"])

    def __call__(self, chars, out_chars, sources, out_splits, span_ends, ids):
        """Flat int64 `(starts, ends)` of the pieces `ids` (ragged [batch, (pieces)]) in the
        input texts, from `_AlbertPreprocessing(chars, with_spans=True)`'s outputs."""
        size = tf.size(out_chars)
        rows = row_ids(out_splits)
        row_end = tf.gather(out_splits, rows + 1)
        code_points = tf.where(out_chars == 0, self._nul_stand_in, out_chars)
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // BLOCK_SIZE)
                          * BLOCK_SIZE + code_points % BLOCK_SIZE)
        spelling, unit_length = self._units(code_points, entry, row_end)
        unit_start = self._unit_starts(unit_length)

        # The normalized characters, each with its unit's first character.
        counts = tf.where(unit_start, tf.gather(self._spelling_lengths, spelling), 0)
        splits = tf.pad(tf.cumsum(counts), [[1, 0]])
        unit = row_ids(splits)
        within = tf.range(tf.size(unit)) - tf.gather(splits, unit)
        classes = tf.gather(self._spelling_values, tf.gather(
            self._spelling_splits, tf.gather(spelling, unit)) + within)
        normalized_splits = tf.gather(splits, out_splits)
        normalized_rows = row_ids(normalized_splits)

        # The dummy prefix points at the first unit that is not a lone space.
        not_space_unit = unit_start & (spelling != self._space_spelling)
        before = tf.pad(tf.cumsum(tf.cast(not_space_unit, tf.int32)), [[1, 0]])
        first_unit = tf.gather(tf.pad(_positions(not_space_unit), [[0, 1]],
                                      constant_values=size), tf.gather(before, out_splits[:-1]))
        dummy = tf.minimum(first_unit, out_splits[1:])

        # Whitespace: no space at the start (after the dummy prefix) or after a space.
        space = classes % 2 == _SPACE_BIT
        starts_row = tf.range(tf.size(unit)) == tf.gather(normalized_splits, normalized_rows)
        kept = ~(space & (_shift(space, -1, fill=True) | starts_row))
        kept_before = tf.pad(tf.cumsum(tf.cast(kept, tf.int32)), [[1, 0]])
        kept_splits = tf.gather(kept_before, normalized_splits)
        kept_positions = _positions(kept)
        kept_rows = tf.gather(normalized_rows, kept_positions)
        last = tf.gather(tf.pad(kept_positions, [[0, 1]]), tf.maximum(kept_splits[1:] - 1, 0))
        # ... nor at the end: the text then ends where that space's unit starts.
        trimmed = (kept_splits[1:] > kept_splits[:-1]) & tf.gather(
            tf.pad(space, [[0, 1]]), last)
        text_end = tf.where(trimmed, tf.gather(tf.pad(unit, [[0, 1]]), last), out_splits[1:])
        kept_index = tf.range(tf.size(kept_positions))
        included = ~(tf.gather(trimmed, kept_rows)
                     & (kept_index == tf.gather(kept_splits[1:], kept_rows) - 1))

        # A run of unknown characters is one piece (the dummy prefix may start it).
        unknown = tf.gather(classes, kept_positions) // _UNKNOWN_BIT > 0
        dummy_unknown = tf.constant(self._space_unknown)
        starts_kept_row = kept_index == tf.gather(kept_splits, kept_rows)
        after_unknown = tf.where(starts_kept_row, dummy_unknown,
                                 _shift(unknown, -1, fill=False))
        counted = included & ~(unknown & after_unknown)
        counted_before = tf.pad(tf.cumsum(tf.cast(counted, tf.int32)), [[1, 0]])
        counted_splits = tf.gather(counted_before, kept_splits)
        counted_units = tf.pad(tf.gather(unit, tf.gather(kept_positions, _positions(counted))),
                               [[0, 1]])

        # Pieces: counted characters from the start of their row (0: the dummy prefix).
        piece_splits = tf.cast(ids.row_splits, tf.int32)
        lengths = tf.gather(self._piece_lengths, ids.flat_values)
        piece_rows = row_ids(piece_splits)
        ends = tf.cumsum(lengths)
        ends -= tf.gather(tf.pad(ends, [[1, 0]]), tf.gather(piece_splits, piece_rows))
        row_counted = tf.gather(counted_splits, piece_rows)
        row_count = tf.gather(counted_splits, piece_rows + 1) - row_counted

        def unit_at(counted_index):
            """The unit (preprocessed character) that a count from the row start reaches."""
            inside = tf.gather(counted_units, tf.clip_by_value(
                row_counted + counted_index - 1, 0, tf.size(counted_units) - 1))
            return tf.where(counted_index == 0, tf.gather(dummy, piece_rows),
                            tf.where(counted_index <= row_count, inside,
                                     tf.gather(text_end, piece_rows)))

        begin, end = unit_at(ends - lengths), unit_at(ends)
        # A word's first piece starts at the word, not at the space before it.
        padded_chars = tf.pad(out_chars, [[0, 1]])
        begin += tf.cast((begin < end) & (tf.gather(padded_chars, begin) == _SPACE_CHAR),
                         tf.int32)
        # Preprocessed characters -> input bytes: the input character each comes from.
        padded_sources = tf.pad(sources, [[0, 1]])
        return _input_span(chars, span_ends,
                           lambda char: tf.gather(padded_sources, tf.maximum(char, 0)),
                           begin, end, tf.gather(out_splits, piece_rows + 1))

    def _units(self, code_points, entry, row_end):
        """Each character's spelling and length as a unit: its own, or those of the longest
        rule of several characters that starts there (searched where a rule may start)."""
        spelling = entry % self._num_spellings
        length = tf.ones_like(code_points)
        if not self._levels:
            return spelling, length
        candidates = _positions(entry // self._num_spellings > 0)

        def longest_rules():
            rule_spelling = tf.gather(spelling, candidates)
            rule_length = tf.ones_like(candidates)
            prefix = tf.cast(tf.gather(entry // self._num_spellings, candidates) - 1, tf.int64)
            alive = tf.ones_like(candidates, tf.bool)
            last = tf.maximum(tf.size(code_points) - 1, 0)
            for length_so_far, (keys, rules) in enumerate(self._levels, start=2):
                position = candidates + length_so_far - 1
                alive &= position < tf.gather(row_end, candidates)
                value = prefix * _CODE_POINT_RANGE + tf.cast(
                    tf.gather(code_points, tf.minimum(position, last)), tf.int64)
                index = _sorted_index(keys, value)
                alive &= tf.gather(keys, index) == value
                rule = tf.gather(rules, index)
                completes = alive & (rule >= 0)
                rule_length = tf.where(completes, length_so_far, rule_length)
                rule_spelling = tf.where(completes, rule, rule_spelling)
                prefix = tf.cast(index, tf.int64)
            size = tf.size(code_points)
            return (spelling + tf.math.unsorted_segment_sum(
                        rule_spelling - tf.gather(spelling, candidates), candidates, size),
                    length + tf.math.unsorted_segment_sum(rule_length - 1, candidates, size))

        # Most texts have no character that starts such a rule: no search (TFLite's IF).
        return tf.cond(tf.size(candidates) > 0, longest_rules, lambda: (spelling, length))

    def _unit_starts(self, unit_length):
        """Where the normalizer's units start: greedily from each row's start, a unit as
        long as the longest rule there. A character that no earlier rule could cover starts
        one; from those, the chains of units are followed by pointer doubling."""
        if not self._levels:
            return tf.ones_like(unit_length, tf.bool)
        size = tf.size(unit_length)
        following = tf.range(size) + unit_length
        covered = tf.zeros_like(unit_length, tf.bool)
        for back in range(1, len(self._levels) + 1):  # rules of up to len + 1 characters
            covered |= _shift(following, -back, fill=0) > tf.range(size)

        def step(starts, jump, changed):
            landed = tf.math.unsorted_segment_sum(tf.cast(starts, tf.int32), jump, size + 1) > 0
            grown = starts | landed
            changed = tf.reduce_any(grown & ~starts)
            return grown, tf.gather(jump, jump), changed

        starts, _, _ = tf.while_loop(
            lambda starts, jump, changed: changed, step,
            (tf.pad(~covered, [[0, 1]], constant_values=True), tf.pad(following, [[0, 1]],
                                                                       constant_values=size),
             tf.constant(True)))
        return tf.slice(starts, [0], [size])


def _sorted_index(keys, values):
    """For each of `values`, the index of the last of the sorted `keys` not above it (0 if
    none): a binary search in gathers (TFLite has no searchsorted)."""
    count = int(keys.shape[0])
    index = tf.zeros_like(values, tf.int32)
    step = 1 << max(count - 1, 0).bit_length()
    while step:
        probe = index + step
        fits = (probe < count) & (tf.gather(keys, tf.minimum(probe, count - 1)) <= values)
        index = tf.where(fits, probe, index)
        step //= 2
    return index
