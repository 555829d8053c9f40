"""BERT WordPiece tokenization inside the TensorFlow graph.

Two pipelines share one layer:

* The default (reference) pipeline reproduces the original BERT tokenizer as Hugging Face
  ``tokenizers`` implements it (``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece``).
  Lines of printable ASCII (plus tab and line breaks) go straight to
  ``FastWordpieceTokenize`` with its built-in pre-tokenization, which splits them exactly as
  the reference does. Other lines take the character route: every distinct character of
  the batch is normalized on its own (control and format characters removed; uncased: NFD,
  accents (Mn) removed, then lower case) and classified as whitespace, isolated
  (punctuation, CJK ideograph) or word character; the lines are rebuilt from the normalized
  characters with spaces between words, split on spaces and cut into wordpieces (with
  offsets, words are joined with ``UnsortedSegmentJoin`` instead, keeping each character's
  input span). It uses TensorFlow core ops plus tf.text's ``NormalizeUTF8`` and
  ``FastWordpieceTokenizeWithOffsets``, all of which TF Serving links. Both routes are
  chains of single-threaded ops, so a route with many rows runs on two halves side by side.
* ``tflite_compatible=True`` runs the same normalization with ops that convert to TFLite:
  TFLite builtins plus tf.text's ``ByteSplitWithOffsets``, ``FastWordpieceDetokenize`` and
  ``FastWordpieceTokenize``, all resolved by tf.text's TFLite op registrar. It decodes UTF-8
  by arithmetic on the bytes, looks every code point up in a table of what the reference
  normalization makes of it (``character_table.py``, built from the character route's own
  normalization), spells the words by detokenizing their characters with a vocabulary of
  single characters, and cuts them into wordpieces. Its ids and offsets are those of the
  default pipeline.

Both pipelines normalize one character at a time, so both miss one thing the reference does:
uncased, its NFD sorts a run of combining marks by combining class. Some of the marks it
keeps (it strips non-spacing ones) have a class, e.g. U+302E, U+1D165 or U+08D4; where two
with different classes stand out of order in a word whose characters the vocabulary all
holds, the ids differ.

Both pipelines can cut every text to its first ``max_text_bytes`` bytes first, at a UTF-8
character boundary (the default one with ``cut_texts``, the TFLite-compatible one by keeping
that many bytes of each row after the byte split, where a character cut at the limit reads
as invalid bytes, which it drops); past the cut, memory and time grow with the bytes kept, not
with the text. Both cuts are the same on valid UTF-8 (on a run of over three continuation
bytes at the limit, invalid, ``cut_texts`` may cut up to four bytes earlier).
"""

import keras
import tensorflow as tf

from keras_bert_core.text.character_normalization import (
    ISOLATED_CHAR,
    MAX_CHARS_PER_WORD,
    REMOVED_CHAR,
    WHITESPACE_CHAR,
    WORD_CHAR,
    normalize_characters,
    too_long_words,
)
from keras_bert_core.text.fast_wordpiece import fast_wordpiece
from keras_bert_core.text.string_batches import (
    check_max_text_bytes,
    cut_texts,
    merge_words,
    route_rows,
)
from keras_bert_core.text.tflite_tokenization import TfliteWordpieces, row_ids
from keras_bert_core.text.tokenizer import Tokenizer
from keras_bert_core.text.vocabulary.files import WORDPIECE
from keras_bert_core.text.vocabulary.wordpiece_vocabulary import load_vocabulary

# Lines that FastWordpieceTokenize's own pre-tokenization splits exactly as the reference:
# ASCII has no accents, no CJK and one case mapping, and its punctuation is the same in
# both. Other ASCII control characters are excluded: the reference removes them, the fast
# pre-tokenizer splits on them.
_PLAIN_ASCII = r"[\x20-\x7e\t\n\r]*"


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertTokenizer(Tokenizer):
    """BERT WordPiece tokenizer that runs inside the TensorFlow graph.

    Strings go in, wordpiece ids come out: in a `tf.data` pipeline, in a `tf.function`,
    in an exported SavedModel (TF Serving) and, with `tflite_compatible=True`, in a TFLite
    model. The default pipeline gives the ids of the reference BERT tokenizer (as Hugging
    Face `tokenizers` reproduces it) including its Unicode handling: uncased mode lower-cases,
    applies NFD and strips accents; both modes remove control and format characters (e.g.
    zero-width space), split on whitespace and punctuation, put each CJK ideograph in its own
    word, and map words longer than 100 characters to `[UNK]`.

    Offsets: `inputs[i][start:end]` (in bytes) is the input text a wordpiece comes from, the
    span of its word for `[UNK]`; the TFLite-compatible pipeline computes them with TFLite
    builtin ops too.

    Invalid UTF-8: each invalid byte sequence reads as U+FFFD, which the reference drops, so
    invalid bytes are ignored (offsets still index the input bytes).

    With `max_text_bytes`, only the first `max_text_bytes` bytes of each text are tokenized,
    cut at a UTF-8 character boundary as `cut_texts` cuts them (both pipelines; offsets
    index the original text, which the cut one begins). It bounds the tokenizer's memory
    and time for graphs that take texts from others, e.g. a `.tflite` file, where no op
    can cut a string before the tokenizer.

    Args:
        vocabulary: path to a BERT `vocab.txt` or a list of tokens (index = id). It must
            contain `[PAD] [UNK] [CLS] [SEP] [MASK]`. The config stores it as a list; in
            a `.keras` file it is the asset `vocab.txt` instead (see `text.vocabulary.assets`).
            None: no vocabulary until `load_assets` reads one.
        lower_case: uncased model (lower case, NFD, strip accents) if True, cased if False.
        tflite_compatible: tokenize with ops that convert to TFLite (builtins and tf.text
            ops that its TFLite registrar resolves), to the same ids and offsets.
        max_text_bytes: tokenize only this many first bytes of each text, cut at a
            character boundary (an integer of at least 4); None: whole texts.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]
    >>> tokenizer = BertTokenizer(vocab)
    >>> tokenizer(["The quick fox.", "Fox!"]).to_list()
    [[5, 6, 7, 8, 9], [8, 1]]
    >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["The quick fox."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 4, 6, 10, 13]], [[3, 6, 9, 13, 14]])
    >>> tokenizer.word_ids(ids).to_list()
    [[0, 1, 1, 2, 3]]
    >>> BertTokenizer(vocab, tflite_compatible=True)(["The quick fox.", "Fox!"]).to_list()
    [[5, 6, 7, 8, 9], [8, 1]]
    >>> BertTokenizer(vocab, tflite_compatible=True, max_text_bytes=9)(
    ...     ["The quick fox."]).to_list()
    [[5, 6, 7]]
    """

    vocabulary_kind = WORDPIECE

    def __init__(self, vocabulary, lower_case=True, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        super().__init__(**kwargs)
        self.lower_case = bool(lower_case)
        self.tflite_compatible = bool(tflite_compatible)
        check_max_text_bytes(max_text_bytes)
        self.max_text_bytes = max_text_bytes
        self.vocabulary = None
        if vocabulary is not None:
            self._set_vocabulary(vocabulary)

    @property
    def has_vocabulary(self):
        return self.vocabulary is not None

    def _set_vocabulary(self, vocabulary):
        self.vocabulary = load_vocabulary(vocabulary)
        self._token_ids = {token: i for i, token in enumerate(self.vocabulary)}
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            self._is_suffix = tf.constant([t.startswith("##") for t in self.vocabulary])
            # Takes single normalized words: at most 100 characters of at most 4 bytes each.
            self._word_wordpiece = fast_wordpiece(
                self.vocabulary,
                max_bytes_per_word=4 * MAX_CHARS_PER_WORD,
                token_out_type=tf.int32,
                no_pretokenization=True,
            )
            if self.tflite_compatible:
                self._tflite = TfliteWordpieces(self.vocabulary, self.lower_case,
                                                self._word_wordpiece, self.max_text_bytes)
            else:
                # Splits whole strings into words itself. It counts bytes: only ASCII words
                # get the reference's character limit.
                self._text_wordpiece = fast_wordpiece(
                    self.vocabulary,
                    max_bytes_per_word=MAX_CHARS_PER_WORD,
                    token_out_type=tf.int32,
                    no_pretokenization=False,
                )

    # Vocabulary lookups (Python side).
    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self.vocabulary)

    @staticmethod
    def continues_word(token):
        """Whether `token` continues the word of the token before it (`##` pieces)."""
        return token.startswith("##")

    def token_to_id(self, token):
        self._check_vocabulary()
        if token not in self._token_ids:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    def id_to_token(self, token_id):
        self._check_vocabulary()
        if not 0 <= token_id < len(self.vocabulary):
            raise KeyError(f"Id {token_id} is outside the vocabulary of {len(self.vocabulary)}.")
        return self.vocabulary[token_id]

    def word_ids(self, token_ids):
        """Index of the word each wordpiece belongs to, counted from 0 in each row.

        A word's later pieces are the `##` suffix pieces, so this needs the ids only; use it to
        label the first piece of each word (token tagging) or to pool pieces per word.

        Args:
            token_ids: int ragged [batch, (wordpieces)] ids from this tokenizer.

        Returns:
            int32 ragged tensor shaped like `token_ids`.
        """
        starts_word = tf.cast(~tf.gather(self._is_suffix, token_ids.flat_values), tf.int32)
        words_so_far = tf.cumsum(starts_word)
        # Subtract the words of earlier rows: the count just before each row's first piece.
        before_row = tf.concat([[0], words_so_far], 0)
        row_base = tf.gather(before_row, token_ids.row_splits[:-1])
        word_ids = words_so_far - 1 - tf.gather(row_base, token_ids.value_rowids())
        return token_ids.with_flat_values(word_ids)

    def _tokenize(self, text, with_offsets):
        if self.tflite_compatible:
            return self._tflite(text, with_offsets)
        return self._reference_pipeline(text, with_offsets)

    def _reference_pipeline(self, text, with_offsets):
        """Ids (and offsets) of the reference pipeline: plain ASCII lines by the fast route,
        the others by the character route, rows back in input order."""
        text = cut_texts(text, self.max_text_bytes)
        plain = tf.strings.regex_full_match(text, _PLAIN_ASCII)
        if with_offsets:
            return route_rows(text, plain, self._plain_ascii_with_offsets,
                               self._character_route_with_offsets,
                               dtypes=(tf.int32, tf.int64, tf.int64))
        return route_rows(text, plain, lambda t: self._plain_ascii_with_offsets(t)[:1],
                           self._character_route_ids, dtypes=(tf.int32,))

    def _plain_ascii_with_offsets(self, text):
        if self.lower_case:
            text = tf.strings.lower(text)  # ASCII: every byte stays where it was
        return self._text_wordpiece.tokenize_with_offsets(text)

    def _distinct_characters(self, codepoints):
        """Normalizes each distinct code point once (batches hold far fewer distinct
        characters than characters): `(raw, normalized, kind, index)`, where `index` maps
        each input code point to its entry."""
        distinct, index = tf.unique(codepoints)
        raw = tf.strings.unicode_encode(tf.expand_dims(distinct, 1), "UTF-8")
        normalized, kind = normalize_characters(raw, self.lower_case)
        return raw, normalized, kind, index

    def _character_route_ids(self, text):
        """Rebuilds each line from its normalized characters, with spaces around words, and
        splits it on the spaces: string ops over whole lines instead of per-character
        segment bookkeeping."""
        batch_size = tf.shape(text)[0]
        # A "\n" after each line marks, in the joined batch, where the line ends.
        codepoints = tf.strings.unicode_decode(
            tf.strings.join([text, "\n"]), "UTF-8", errors="replace"
        )
        _, normalized, kind, index = self._distinct_characters(codepoints.flat_values)
        # Removed characters normalize to "".
        spelled = tf.where(kind == WHITESPACE_CHAR, " ", normalized)
        spelled = tf.where(kind == ISOLATED_CHAR, tf.strings.join([" ", normalized, " "]), spelled)
        chars = tf.gather(spelled, index)
        line_ends = tf.expand_dims(codepoints.row_splits[1:] - 1, 1)
        chars = tf.tensor_scatter_nd_update(chars, line_ends, tf.fill([batch_size], "\n"))
        lines = tf.strings.split(tf.strings.reduce_join(chars), "\n")[:batch_size]
        words = tf.strings.split(lines)
        flat_words = words.flat_values
        words = words.with_flat_values(tf.where(too_long_words(flat_words), "[UNK]", flat_words))
        return (merge_words(self._word_wordpiece.tokenize(words)),)

    def _word_characters(self, text):
        """Normalized characters of the words of `text`, flat, with their row, their byte span
        in the input and whether each begins a word."""
        codepoints, char_starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8", errors="replace"
        )
        rows = row_ids(codepoints.row_splits)
        # Characters stay indices into the table of distinct characters until the end, so
        # only the characters of words are gathered as strings.
        raw, normalized, kind, index = self._distinct_characters(codepoints.flat_values)
        kinds = tf.gather(kind, index)
        kept = tf.where(kinds != REMOVED_CHAR)[:, 0]
        kinds, kept_rows = tf.gather(kinds, kept), tf.gather(rows, kept)
        previous_kind = tf.concat([[WHITESPACE_CHAR], kinds], 0)[:-1]
        previous_row = tf.concat([[-1], kept_rows], 0)[:-1]
        begins_word = (
            (kept_rows != previous_row) | (previous_kind != WORD_CHAR) | (kinds == ISOLATED_CHAR)
        )
        in_word = kinds != WHITESPACE_CHAR
        positions = tf.boolean_mask(kept, in_word)
        char_index = tf.gather(index, positions)
        char_starts = tf.gather(char_starts.flat_values, positions)
        char_ends = char_starts + tf.cast(tf.gather(tf.strings.length(raw), char_index), tf.int64)
        return (tf.gather(normalized, char_index), tf.boolean_mask(kept_rows, in_word),
                char_starts, char_ends, tf.boolean_mask(begins_word, in_word))

    def _character_route_with_offsets(self, text):
        chars, rows, char_starts, char_ends, begins_word = self._word_characters(text)
        word_of_char = tf.cumsum(tf.cast(begins_word, tf.int64)) - 1
        num_words = tf.reduce_sum(tf.cast(begins_word, tf.int64))
        words = tf.strings.unsorted_segment_join(chars, word_of_char, num_words)
        too_long = too_long_words(words)
        words = tf.where(too_long, "[UNK]", words)
        word_rows = tf.boolean_mask(rows, begins_word)
        batch_size = tf.shape(text, out_type=tf.int64)[0]

        def by_row(pieces):
            return merge_words(tf.RaggedTensor.from_value_rowids(
                pieces, word_rows, nrows=batch_size, validate=False))

        pieces, piece_starts, piece_ends = self._word_wordpiece.tokenize_with_offsets(words)
        # Piece offsets count bytes of the normalized word; find the characters they fall in.
        char_offsets = tf.cumsum(tf.cast(tf.strings.length(chars), tf.int64), exclusive=True)
        word_offsets = tf.boolean_mask(char_offsets, begins_word)
        piece_word = pieces.value_rowids()
        base = tf.gather(word_offsets, piece_word)
        first_char = _char_at(char_offsets, base + piece_starts.flat_values)
        last_char = _char_at(char_offsets, base + piece_ends.flat_values - 1)
        # An over-long word was replaced by "[UNK]": its piece spans the whole word.
        last_char_of_word = tf.math.segment_max(
            tf.range(tf.size(word_of_char, out_type=tf.int64)), word_of_char
        )
        last_char = tf.where(
            tf.gather(too_long, piece_word), tf.gather(last_char_of_word, piece_word), last_char
        )
        starts = pieces.with_flat_values(tf.gather(char_starts, first_char))
        ends = pieces.with_flat_values(tf.gather(char_ends, last_char))
        return by_row(pieces), by_row(starts), by_row(ends)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                # A `.keras` file holds it as an asset (see `text.vocabulary.assets`).
                "vocabulary": (list(self.vocabulary) if self.config_holds_vocabulary
                               else None),
                "lower_case": self.lower_case,
                "tflite_compatible": self.tflite_compatible,
                "max_text_bytes": self.max_text_bytes,
            }
        )
        return config


def _char_at(char_offsets, byte_offsets):
    """Index of the character that holds each byte, given the characters' first bytes."""
    return tf.searchsorted(char_offsets, byte_offsets, "right", out_type=tf.int64) - 1
