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
import tensorflow_text as tf_text

from keras_bert_core.text import character_table
from keras_bert_core.text.vocab_file import load_vocabulary

# Longer words become a single [UNK], as in the reference tokenizer.
MAX_CHARS_PER_WORD = 100

# Character classes, matched by RE2 against one normalized character. The reference
# tokenizer's Unicode category tables are older than those of RE2 in TensorFlow: characters
# assigned since as format (Cf), non-spacing marks (Mn) or punctuation (P) are plain word
# characters to the reference, so the classes leave them out (found by comparing every code
# point with the reference; tests/text/test_tokenizer.py keeps that comparison).
_NEWER_CF = r"\x{890}-\x{891}\x{8e2}\x{110cd}\x{13430}-\x{1343f}"
_NEWER_MN = (
    r"\x{7fd}\x{898}-\x{89f}\x{8ca}-\x{8e1}\x{9fe}\x{afa}-\x{aff}\x{b55}\x{c04}\x{c3c}\x{d00}"
    r"\x{d3b}-\x{d3c}\x{d81}\x{eba}\x{ece}\x{180f}\x{1885}-\x{1886}\x{1abf}-\x{1ace}"
    r"\x{1df6}-\x{1dfb}\x{a82c}\x{a8c5}\x{a8ff}\x{a9bd}\x{10d24}-\x{10d27}\x{10eab}-\x{10eac}"
    r"\x{10efd}-\x{10eff}\x{10f46}-\x{10f50}\x{10f82}-\x{10f85}\x{11070}\x{11073}-\x{11074}"
    r"\x{110c2}\x{111c9}\x{111cf}\x{1123e}\x{11241}\x{1133b}\x{11438}-\x{1143f}"
    r"\x{11442}-\x{11444}\x{11446}\x{1145e}\x{1182f}-\x{11837}\x{11839}-\x{1183a}"
    r"\x{1193b}-\x{1193c}\x{1193e}\x{11943}\x{119d4}-\x{119d7}\x{119da}-\x{119db}\x{119e0}"
    r"\x{11a01}-\x{11a0a}\x{11a33}-\x{11a38}\x{11a3b}-\x{11a3e}\x{11a47}\x{11a51}-\x{11a56}"
    r"\x{11a59}-\x{11a5b}\x{11a8a}-\x{11a96}\x{11a98}-\x{11a99}\x{11c30}-\x{11c36}"
    r"\x{11c38}-\x{11c3d}\x{11c3f}\x{11c92}-\x{11ca7}\x{11caa}-\x{11cb0}\x{11cb2}-\x{11cb3}"
    r"\x{11cb5}-\x{11cb6}\x{11d31}-\x{11d36}\x{11d3a}\x{11d3c}-\x{11d3d}\x{11d3f}-\x{11d45}"
    r"\x{11d47}\x{11d90}-\x{11d91}\x{11d95}\x{11d97}\x{11ef3}-\x{11ef4}\x{11f00}-\x{11f01}"
    r"\x{11f36}-\x{11f3a}\x{11f40}\x{11f42}\x{13440}\x{13447}-\x{13455}\x{16f4f}\x{16fe4}"
    r"\x{1cf00}-\x{1cf2d}\x{1cf30}-\x{1cf46}\x{1e000}-\x{1e006}\x{1e008}-\x{1e018}"
    r"\x{1e01b}-\x{1e021}\x{1e023}-\x{1e024}\x{1e026}-\x{1e02a}\x{1e08f}\x{1e130}-\x{1e136}"
    r"\x{1e2ae}\x{1e2ec}-\x{1e2ef}\x{1e4ec}-\x{1e4ef}\x{1e944}-\x{1e94a}"
)
_NEWER_P = (
    r"\x{61d}\x{9fd}\x{a76}\x{c77}\x{c84}\x{1b7d}-\x{1b7e}\x{2e43}-\x{2e4f}\x{2e52}-\x{2e5d}"
    r"\x{10ead}\x{10f55}-\x{10f59}\x{10f86}-\x{10f89}\x{1144b}-\x{1144f}\x{1145a}-\x{1145b}"
    r"\x{1145d}\x{11660}-\x{1166c}\x{116b9}\x{1183b}\x{11944}-\x{11946}\x{119e2}"
    r"\x{11a3f}-\x{11a46}\x{11a9a}-\x{11a9c}\x{11a9e}-\x{11aa2}\x{11b00}-\x{11b09}"
    r"\x{11c41}-\x{11c45}\x{11c70}-\x{11c71}\x{11ef7}-\x{11ef8}\x{11f43}-\x{11f4f}\x{11fff}"
    r"\x{12ff1}-\x{12ff2}\x{16e97}-\x{16e9a}\x{16fe2}\x{1e95e}-\x{1e95f}"
)
# [^\P{X}...] is "category X except ...".
_REMOVED = rf"\x00|\x{{fffd}}|[^\P{{Cc}}\t\n\r]|[^\P{{Cf}}{_NEWER_CF}]|\p{{Co}}"
# U+1734 was Mn in the reference's tables (Mc today).
_ACCENT = rf"[^\P{{Mn}}{_NEWER_MN}]|\x{{1734}}"
_WHITESPACE = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]"
_ISOLATED = (
    # ASCII symbols count as punctuation; U+166D and U+111C9 were punctuation in the
    # reference's tables.
    rf"[!-/:-@\[-`{{-~\x{{166d}}\x{{111c9}}]|[^\P{{P}}{_NEWER_P}]"
    # CJK ideographs, with the reference's bounds (its extension-E range starts at 2B920).
    r"|[\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}\x{2a700}-\x{2b73f}"
    r"\x{2b740}-\x{2b81f}\x{2b920}-\x{2ceaf}\x{f900}-\x{faff}\x{2f800}-\x{2fa1f}]"
)
_REMOVED_CHAR, _WHITESPACE_CHAR, _ISOLATED_CHAR, _WORD_CHAR = (
    character_table.REMOVED_CHAR, character_table.WHITESPACE_CHAR,
    character_table.ISOLATED_CHAR, character_table.WORD_CHAR)
# Lines that FastWordpieceTokenize's own pre-tokenization splits exactly as the reference:
# ASCII has no accents, no CJK and one case mapping, and its punctuation is the same in
# both. Other ASCII control characters are excluded: the reference removes them, the fast
# pre-tokenizer splits on them.
_PLAIN_ASCII = r"[\x20-\x7e\t\n\r]*"
# Each route is a chain of single-threaded string ops: from this many rows on, it runs on two
# halves of them side by side (1.5x lines/s on 2 cores at batch 256; with fewer rows the
# second chain of ops costs about what it gains).
_ROWS_TO_SPLIT_A_ROUTE = 32
_BLOCK = character_table.BLOCK_SIZE


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertTokenizer(keras.layers.Layer):
    """BERT WordPiece tokenizer that runs inside the TensorFlow graph.

    Strings go in, wordpiece ids come out: in a `tf.data` pipeline, in a `tf.function`,
    in an exported SavedModel (TF Serving) and, with `tflite_compatible=True`, in a TFLite
    model. The default pipeline gives the ids of the reference BERT tokenizer (as Hugging
    Face `tokenizers` reproduces it) including its Unicode handling: uncased mode lower-cases,
    applies NFD and strips accents; both modes remove control and format characters (e.g.
    zero-width space), split on whitespace and punctuation, put each CJK ideograph in its own
    word, and map words longer than 100 characters to `[UNK]`.

    Invalid UTF-8: each invalid byte sequence reads as U+FFFD, which the reference drops, so
    invalid bytes are ignored (offsets still index the input bytes).

    With `max_text_bytes`, only the first `max_text_bytes` bytes of each text are tokenized,
    cut at a UTF-8 character boundary as `cut_texts` cuts them (both pipelines; offsets
    index the original text, which the cut one begins). It bounds the tokenizer's memory
    and time for graphs that take texts from others, e.g. a `.tflite` file, where no op
    can cut a string before the tokenizer.

    Args:
        vocabulary: path to a BERT `vocab.txt` or a list of tokens (index = id). It must
            contain `[PAD] [UNK] [CLS] [SEP] [MASK]`. The config stores it as a list.
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

    def __init__(self, vocabulary, lower_case=True, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # Strings go in as they are (Keras would cast inputs to the layer dtype).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.vocabulary = load_vocabulary(vocabulary)
        self.lower_case = bool(lower_case)
        self.tflite_compatible = bool(tflite_compatible)
        if max_text_bytes is not None and (not isinstance(max_text_bytes, int) or isinstance(
                max_text_bytes, bool) or max_text_bytes < 4):
            raise ValueError("max_text_bytes must be an integer of at least 4 or None, got "
                             f"{max_text_bytes!r}")
        self.max_text_bytes = max_text_bytes
        self._token_ids = {token: i for i, token in enumerate(self.vocabulary)}
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            self._is_suffix = tf.constant([t.startswith("##") for t in self.vocabulary])
            # Takes single normalized words: at most 100 characters of at most 4 bytes each.
            self._word_wordpiece = tf_text.FastWordpieceTokenizer(
                self.vocabulary,
                max_bytes_per_word=4 * MAX_CHARS_PER_WORD,
                token_out_type=tf.int32,
                no_pretokenization=True,
            )
            if self.tflite_compatible:
                block_of, entries, spellings, alphabet = character_table.vocabulary_table(
                    self.vocabulary, self.lower_case)
                self._block_of = tf.constant(block_of)
                self._entries = tf.constant(entries)
                self._spellings = tf.constant(spellings)
                self._alphabet_bytes = tf.constant([len(c.encode("utf-8")) for c in alphabet])
                # Alphabet character i is token 2i at the start of a word and 2i + 1 after:
                # detokenizing a word's characters spells the word.
                self._speller = tf_text.FastWordpieceTokenizer(
                    [token for c in alphabet for token in (c, "##" + c)] + ["[UNK]"],
                    support_detokenization=True,
                )
            else:
                # Splits whole strings into words itself. It counts bytes: only ASCII words
                # get the reference's character limit.
                self._text_wordpiece = tf_text.FastWordpieceTokenizer(
                    self.vocabulary,
                    max_bytes_per_word=MAX_CHARS_PER_WORD,
                    token_out_type=tf.int32,
                    no_pretokenization=False,
                )
        self.built = True

    # Vocabulary lookups (Python side).
    def vocabulary_size(self):
        return len(self.vocabulary)

    def token_to_id(self, token):
        if token not in self._token_ids:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    def id_to_token(self, token_id):
        if not 0 <= token_id < len(self.vocabulary):
            raise KeyError(f"Id {token_id} is outside the vocabulary of {len(self.vocabulary)}.")
        return self.vocabulary[token_id]

    @property
    def pad_id(self):
        return self._token_ids["[PAD]"]

    @property
    def unk_id(self):
        return self._token_ids["[UNK]"]

    @property
    def cls_id(self):
        return self._token_ids["[CLS]"]

    @property
    def sep_id(self):
        return self._token_ids["[SEP]"]

    @property
    def mask_id(self):
        return self._token_ids["[MASK]"]

    def call(self, inputs):
        """Tokenizes strings.

        Args:
            inputs: a string, a list of strings or a string tensor of rank 0 or 1.

        Returns:
            int32 `tf.RaggedTensor` [batch, (wordpieces)] for a batch, or an int32 `tf.Tensor`
            [wordpieces] for a single string.
        """
        text, single = _as_batch(inputs)
        if self.tflite_compatible:
            ids = self._tflite_pipeline(text, with_offsets=False)[0]
        else:
            (ids,) = self._reference_pipeline(text, with_offsets=False)
        _keep_static_batch_size(ids, text)
        return ids[0] if single else ids

    def tokenize_with_offsets(self, inputs):
        """Tokenizes strings and locates every wordpiece in its input string.

        Args:
            inputs: a list of strings or a 1-D string tensor.

        Returns:
            `(token_ids, start_offsets, end_offsets)`: ragged [batch, (wordpieces)] tensors;
            `inputs[i][start:end]` (in bytes) is the input text a wordpiece comes from, the
            span of its word for `[UNK]`. Types are int32, int64, int64. The
            TFLite-compatible pipeline computes them with TFLite builtin ops too.
        """
        text, single = _as_batch(inputs)
        if single:
            raise ValueError("tokenize_with_offsets takes a batch (list or 1-D tensor) of strings.")
        if self.tflite_compatible:
            ids, starts, ends = self._tflite_pipeline(text, with_offsets=True)
        else:
            ids, starts, ends = self._reference_pipeline(text, with_offsets=True)
        for x in (ids, starts, ends):
            _keep_static_batch_size(x, text)
        return ids, starts, ends

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

    def _tflite_pipeline(self, text, with_offsets):
        """The reference pipeline in TFLite builtin ops plus three tf.text ops that tf.text's
        TFLite registrar resolves: decode UTF-8 by arithmetic on the bytes, look each
        character up in the normalization table, spell the words with
        `FastWordpieceDetokenize`, cut them with `FastWordpieceTokenize`. Flat int32 index
        arithmetic only (no ragged gathers, no string ops); few `Where`, no strided slices
        over the text (TFLite's kernels for both are slow)."""
        code_points, lengths, byte_rows, row_starts, byte_splits = _utf8_bytes(
            text, self.max_text_bytes)
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // _BLOCK)
                          * _BLOCK + code_points % _BLOCK)
        kinds = tf.where(lengths > 0, entry % 4, _REMOVED_CHAR)
        # A whitespace character or the start of a row separates words; removed characters
        # (and invalid bytes) do not.
        separators = tf.cumsum(tf.cast((kinds == _WHITESPACE_CHAR) | row_starts, tf.int32))
        in_word = kinds >= _ISOLATED_CHAR
        chars = _positions(in_word)  # the input bytes where word characters start
        separators = tf.gather(separators, chars)
        isolated = tf.gather(kinds, chars) == _ISOLATED_CHAR
        begins_word = (separators != _shift(separators, -1, fill=-1)) | isolated | _shift(
            isolated, -1, fill=False)
        words_so_far = tf.cumsum(tf.cast(begins_word, tf.int32))
        # Each character's normalized characters, as alphabet indices (+1, 0 for none).
        width = self._spellings.shape[1]
        spelled = tf.gather(self._spellings, tf.gather(entry // 4, chars))
        letters_before = tf.cumsum(tf.reduce_sum(tf.cast(spelled > 0, tf.int32), 1),
                                   exclusive=True)
        spelled = tf.reshape(spelled, [-1])
        present = _positions(spelled > 0)
        char_of = present // width
        letters = tf.gather(spelled, present) - 1
        word_starts = tf.concat(
            [tf.gather(letters_before, _positions(begins_word)), tf.shape(letters)], 0)
        word_of_letter = tf.gather(words_so_far, char_of) - 1
        # Over-long words: spelled with the placeholder (index 0), they become [UNK].
        too_long = _shift(word_starts, 1, fill=0) - word_starts > MAX_CHARS_PER_WORD
        letters = tf.where(tf.gather(too_long, word_of_letter), 0, letters)
        first = (present % width == 0) & tf.gather(begins_word, char_of)
        words = self._speller.detokenize(tf.RaggedTensor.from_row_splits(
            2 * letters + 1 - tf.cast(first, tf.int32), tf.cast(word_starts, tf.int64),
            validate=False))
        pieces, starts, ends = self._word_wordpiece.tokenize_with_offsets(words)
        # Rows of pieces: the words before each row's first byte.
        chars_before = tf.gather(tf.pad(tf.cumsum(tf.cast(in_word, tf.int32)), [[1, 0]]),
                                 byte_splits)
        words_before = tf.gather(tf.pad(words_so_far, [[1, 0]]), chars_before)
        row_splits = tf.gather(pieces.row_splits, words_before)

        def by_row(values):
            return tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)

        if not with_offsets:
            return (by_row(pieces.flat_values),)
        # Piece offsets count bytes of the spelled words: find the letters they fall in, then
        # the input characters those come from.
        letter_splits = tf.pad(tf.cumsum(tf.gather(self._alphabet_bytes, letters)), [[1, 0]])
        letter_at_byte = _row_ids(letter_splits)
        base = tf.gather(letter_splits, tf.gather(word_starts, _row_ids(pieces.row_splits)))

        def input_byte(letter_byte):
            return tf.gather(chars, tf.gather(char_of, tf.gather(letter_at_byte, letter_byte)))

        first_byte = input_byte(base + tf.cast(starts.flat_values, tf.int32))
        last_byte = input_byte(base + tf.cast(ends.flat_values, tf.int32) - 1)
        row_base = tf.gather(byte_splits, tf.gather(byte_rows, first_byte))
        starts = tf.cast(first_byte - row_base, tf.int64)
        ends = tf.cast(last_byte + tf.gather(lengths, last_byte) - row_base, tf.int64)
        return by_row(pieces.flat_values), by_row(starts), by_row(ends)

    def _reference_pipeline(self, text, with_offsets):
        """Ids (and offsets) of the reference pipeline: plain ASCII lines by the fast route,
        the others by the character route, rows back in input order."""
        text = cut_texts(text, self.max_text_bytes)
        plain = tf.strings.regex_full_match(text, _PLAIN_ASCII)
        if with_offsets:
            return _route_rows(text, plain, self._plain_ascii_with_offsets,
                               self._character_route_with_offsets,
                               dtypes=(tf.int32, tf.int64, tf.int64))
        return _route_rows(text, plain, lambda t: self._plain_ascii_with_offsets(t)[:1],
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
        spelled = tf.where(kind == _WHITESPACE_CHAR, " ", normalized)
        spelled = tf.where(kind == _ISOLATED_CHAR, tf.strings.join([" ", normalized, " "]), spelled)
        chars = tf.gather(spelled, index)
        line_ends = tf.expand_dims(codepoints.row_splits[1:] - 1, 1)
        chars = tf.tensor_scatter_nd_update(chars, line_ends, tf.fill([batch_size], "\n"))
        lines = tf.strings.split(tf.strings.reduce_join(chars), "\n")[:batch_size]
        words = tf.strings.split(lines)
        flat_words = words.flat_values
        words = words.with_flat_values(tf.where(_too_long(flat_words), "[UNK]", flat_words))
        return (self._word_wordpiece.tokenize(words).merge_dims(1, 2),)

    def _word_characters(self, text):
        """Normalized characters of the words of `text`, flat, with their row, their byte span
        in the input and whether each begins a word."""
        codepoints, char_starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8", errors="replace"
        )
        rows = _row_ids(codepoints.row_splits)
        # Characters stay indices into the table of distinct characters until the end, so
        # only the characters of words are gathered as strings.
        raw, normalized, kind, index = self._distinct_characters(codepoints.flat_values)
        kinds = tf.gather(kind, index)
        kept = tf.where(kinds != _REMOVED_CHAR)[:, 0]
        kinds, kept_rows = tf.gather(kinds, kept), tf.gather(rows, kept)
        previous_kind = tf.concat([[_WHITESPACE_CHAR], kinds], 0)[:-1]
        previous_row = tf.concat([[-1], kept_rows], 0)[:-1]
        begins_word = (
            (kept_rows != previous_row) | (previous_kind != _WORD_CHAR) | (kinds == _ISOLATED_CHAR)
        )
        in_word = kinds != _WHITESPACE_CHAR
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
        too_long = _too_long(words)
        words = tf.where(too_long, "[UNK]", words)
        word_rows = tf.boolean_mask(rows, begins_word)
        batch_size = tf.shape(text, out_type=tf.int64)[0]

        def by_row(pieces):
            return tf.RaggedTensor.from_value_rowids(
                pieces, word_rows, nrows=batch_size, validate=False
            ).merge_dims(1, 2)

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
                "vocabulary": list(self.vocabulary),
                "lower_case": self.lower_case,
                "tflite_compatible": self.tflite_compatible,
                "max_text_bytes": self.max_text_bytes,
            }
        )
        return config


def normalize_characters(chars, lower_case):
    """Normalizes single characters (a string tensor) as the reference does: clean, and
    uncased, strip accents and lower case; returns them with their class (`_REMOVED_CHAR`,
    `_WHITESPACE_CHAR`, `_ISOLATED_CHAR` or `_WORD_CHAR`)."""
    chars = tf.strings.regex_replace(chars, _REMOVED, "")
    if lower_case:
        chars = tf_text.normalize_utf8(chars, "NFD")
        chars = tf.strings.regex_replace(chars, _ACCENT, "")
        chars = tf.strings.lower(chars, encoding="utf-8")
    kind = tf.where(tf.strings.regex_full_match(chars, _ISOLATED), _ISOLATED_CHAR, _WORD_CHAR)
    kind = tf.where(tf.strings.regex_full_match(chars, _WHITESPACE), _WHITESPACE_CHAR, kind)
    return chars, tf.where(tf.strings.length(chars) == 0, _REMOVED_CHAR, kind)


def _too_long(words):
    """Words the reference replaces with [UNK]: over 100 characters after normalization."""
    return tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD


def _route_rows(text, selected, tokenize_selected, tokenize_others, dtypes):
    """Tokenizes the selected rows of `text` with one function and the others with another
    (either on two halves of its rows side by side, when it has many); returns their ragged
    results (one per dtype in `dtypes`) with rows in input order."""
    rows = tf.range(tf.shape(text)[0])
    selected_rows = tf.boolean_mask(rows, selected)
    other_rows = tf.boolean_mask(rows, ~selected)

    def tokenize_rows(tokenize, part):
        # A route with no rows is skipped, not run on an empty batch: a one-text request
        # (TF Serving's usual) takes one route, and each route is ~50 ops.
        def no_rows():
            return tuple(
                tf.RaggedTensor.from_row_splits(tf.zeros([0], dtype), tf.zeros([1], tf.int64),
                                                validate=False)
                for dtype in dtypes
            )

        def all_rows():
            return tokenize(tf.gather(text, part))

        size = tf.size(part)

        def halves():
            half = size // 2
            pieces = zip(tokenize(tf.gather(text, part[:half])),
                         tokenize(tf.gather(text, part[half:])), strict=True)
            return tuple(tf.concat([a, b], 0) for a, b in pieces)

        branch = tf.minimum(size, 1) + tf.cast(size >= _ROWS_TO_SPLIT_A_ROUTE, tf.int32)
        return tf.switch_case(branch, [no_rows, all_rows, halves])

    order = tf.math.invert_permutation(tf.concat([selected_rows, other_rows], 0))
    parts = zip(
        tokenize_rows(tokenize_selected, selected_rows),
        tokenize_rows(tokenize_others, other_rows),
        strict=True,
    )
    return tuple(tf.gather(tf.concat([a, b], 0), order) for a, b in parts)


def cut_texts(texts, max_bytes):
    """Each string of `texts` cut to at most `max_bytes` bytes (None: as it is), at a UTF-8
    character boundary, with TensorFlow core ops.

    Example:
    >>> cut_texts(tf.constant(["abcdef", "ab", "abcé"]), 4).numpy().tolist()
    [b'abcd', b'ab', b'abc']
    """
    if max_bytes is None:
        return texts
    length = tf.strings.length(texts)
    # The byte at `max_bytes`, the first one cut off, and the three before it (the longest
    # UTF-8 character has four bytes); "\0"s for texts that are not cut.
    start = tf.minimum(length, max_bytes - 3)
    window = tf.strings.substr(texts, start, tf.fill(tf.shape(start), 4))
    window = tf.where(length > max_bytes, window, "\0\0\0\0")
    window = tf.io.decode_raw(window, tf.uint8)
    continuation = tf.cast(tf.bitwise.bitwise_and(window, 0xC0) == 0x80, tf.int32)
    # A cut inside a character moves back to its first byte.
    back = tf.reduce_sum(tf.math.cumprod(continuation[..., ::-1], axis=-1), axis=-1)
    return tf.strings.substr(texts, tf.zeros_like(back), max_bytes - back)


def _utf8_bytes(text, max_bytes=None):
    """Decodes UTF-8 with builtin arithmetic on the bytes (TFLite has no Unicode ops).

    With `max_bytes`, only the first `max_bytes` bytes of each row are kept (a character
    cut there decodes as invalid bytes, so the rows read as `cut_texts` cuts them); the
    values returned below are those of the kept bytes, and positions in a row are still
    those of its text.

    Returns, per byte of `text` (flat), the code point of the character starting there and
    its length in bytes (0 where no valid character starts: continuation and invalid bytes;
    the reference reads invalid ones as U+FFFD, which it removes, and a valid character
    never starts inside an invalid run), then each byte's row, whether it starts its row, and
    the row splits; int32."""
    split = tf_text.ByteSplitter().split(text)
    row_splits = tf.cast(split.row_splits, tf.int32)
    byte = split.flat_values
    if max_bytes is not None:
        # The kept bytes' own row splits, then each kept byte's index among all bytes: its
        # position in the kept rows plus how many bytes earlier rows lost. Only tensors of
        # the kept bytes' size are made (no mask over all bytes).
        kept = tf.minimum(row_splits[1:] - row_splits[:-1], max_bytes)
        kept_splits = tf.pad(tf.cumsum(kept), [[1, 0]])
        lost = row_splits - kept_splits
        byte = tf.gather(byte, tf.range(kept_splits[-1]) + tf.gather(lost, _row_ids(
            kept_splits)))
        row_splits = kept_splits
    byte = tf.cast(byte, tf.int32)
    rows = _row_ids(row_splits)
    row_starts = rows != _shift(rows, -1, fill=-1)
    # A row's first byte continues no character of the row before.
    following = [_shift(tf.where(row_starts, 0, byte), k, fill=0) for k in (1, 2, 3)]
    length, low, high = (tf.gather(table, byte) for table in _UTF8_LEADS)
    valid = (length > 0) & ((length < 2) | ((following[0] >= low) & (following[0] <= high)))
    for k in (2, 3):
        valid &= (length <= k) | ((following[k - 1] >= 0x80) & (following[k - 1] < 0xC0))
    code_point = byte - tf.gather([0, 0, 0xC0, 0xE0, 0xF0], length)
    for k, next_byte in enumerate(following, start=2):
        code_point = tf.where(length >= k, code_point * 64 + next_byte - 0x80, code_point)
    return tf.where(valid, code_point, 0), tf.where(valid, length, 0), rows, row_starts, row_splits


def _utf8_leads():
    """Per byte value: the length of the character it starts (0: none) and the range of the
    byte after it (narrower after E0, ED, F0 and F4: no overlong forms, no surrogates,
    nothing past U+10FFFF)."""
    lengths = [1] * 0x80 + [0] * 0x42 + [2] * 0x1E + [3] * 0x10 + [4] * 5 + [0] * 11
    lows = [{0xE0: 0xA0, 0xF0: 0x90}.get(byte, 0x80) for byte in range(256)]
    highs = [{0xED: 0x9F, 0xF4: 0x8F}.get(byte, 0xBF) for byte in range(256)]
    return lengths, lows, highs


_UTF8_LEADS = _utf8_leads()


def _shift(values, offset, fill):
    """`values[i + offset]` at each `i` of a 1-D tensor, `fill` past its ends (`tf.slice`:
    TFLite's strided slice is slow)."""
    padding = [[0, offset]] if offset > 0 else [[-offset, 0]]
    padded = tf.pad(values, padding, constant_values=fill)
    return tf.slice(padded, [max(offset, 0)], tf.shape(values))


def _positions(mask):
    """Indices (int32) of the true values of a 1-D mask."""
    return tf.reshape(tf.cast(tf.where(mask), tf.int32), [-1])


def _char_at(char_offsets, byte_offsets):
    """Index of the character that holds each byte, given the characters' first bytes."""
    return tf.searchsorted(char_offsets, byte_offsets, "right", out_type=tf.int64) - 1


def _count_at(positions, size):
    """How many of `positions` equal each of `0 .. size - 1` (builtin ops: TFLite has them)."""
    capped = tf.cast(tf.minimum(positions, size), tf.int32)  # `size` is counted, then cut
    counts = tf.math.unsorted_segment_sum(
        tf.ones_like(capped), capped, tf.cast(size, tf.int32) + 1)
    return tf.cast(tf.slice(counts, [0], [tf.cast(size, tf.int32)]), positions.dtype)


def _row_ids(row_splits):
    """Row of each value: `RaggedTensor.value_rowids` without its [rows, longest row] mask
    or `RaggedRange` (TFLite has neither)."""
    # Each row start (after the first) adds one; an empty row shares its start with the next.
    return tf.cumsum(_count_at(row_splits[1:-1], row_splits[-1]))


def _keep_static_batch_size(ragged, text):
    """Gives `ragged` the static batch size of `text`, when known (XLA and TPUs need it)."""
    if text.shape[0] is not None:
        ragged.row_splits.set_shape([text.shape[0] + 1])


def _as_batch(inputs):
    """Returns (1-D string tensor, whether the input was a single string)."""
    text = tf.convert_to_tensor(inputs, dtype=tf.string)
    if text.shape.rank == 0:
        return tf.expand_dims(text, 0), True
    if text.shape.rank != 1:
        raise ValueError(f"Expected a string or a 1-D batch of strings, got shape {text.shape}.")
    return text, False

