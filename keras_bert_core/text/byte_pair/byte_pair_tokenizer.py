"""Byte-level BPE tokenization (RoBERTa, GPT-2) inside the TensorFlow graph.

The layer reproduces Hugging Face ``tokenizers`` set up as RoBERTa's ``tokenizer.json`` has
it: a ``ByteLevel`` pre-tokenizer (GPT-2 regex, ``add_prefix_space=False``), a ``BPE`` model
without dropout, and ``RobertaProcessing`` with ``trim_offsets=True`` (which only moves
offsets). Three steps, all TensorFlow core ops plus tf.text's ``RegexSplitWithOffsets``:

1. Pre-tokenization: GPT-2's regex, rewritten for RE2 (see `pretokenization`).
2. Byte-pair merges. Words are deduplicated (a batch repeats most of its words), read as
   bytes, and each byte becomes the id of its GPT-2 byte symbol (the printable byte itself,
   or a character from U+0100 up for the others). A ``tf.while_loop`` then merges, in every
   word at once, all occurrences of the word's lowest-ranked pair (ranks from a hash table
   keyed by the two ids; in a run of equal symbols, pairs from the left without overlap),
   and sets aside words with no pair left, until none remain. This is the reference's
   order (lowest rank first, leftmost first) for merge lists in which a merged symbol only
   pairs at a higher rank than the merge that made it, as every trained list does.
3. Offsets. Each token covers its own bytes of the input, less its leading and trailing
   spaces (``trim_offsets``; a token of spaces only becomes an empty span at its end).

Offsets count bytes of the UTF-8 input, where the reference counts characters: its span of a
token is the span of the characters that hold the token's bytes (a token that holds only
some bytes of a character gets that whole character there, exactly its own bytes here).

Special tokens (``<s>``, ``</s>``, ``<pad>``, ``<mask>``, ``<unk>``) are never produced from
text: ``"<s>"`` in a text is tokenized as its characters (the reference with
``split_special_tokens=True``). Byte-level BPE has no unknown input: every byte has a symbol.

Two steps of ModernBERT's ``tokenizer.json`` come first where the tokenizer is given them:
``normalization="NFC"`` (tf.text's ``NormalizeUTF8``; offsets are mapped back to the bytes of
the input; see `normalization` for the rare texts it orders otherwise) and ``added_tokens``,
the file's non-special added tokens, found in the normalized text as ``tokenizers`` finds
them (see `added_tokens`).
"""

import keras
import tensorflow as tf

from keras_bert_core.text.byte_pair.added_tokens import added_token_pattern, split_added_tokens
from keras_bert_core.text.byte_pair.normalization import normalize, source_offsets
from keras_bert_core.text.byte_pair.pretokenization import (
    ASCII_PRETOKEN_PATTERN,
    ASCII_TEXT,
    GPT2_PRETOKEN_PATTERN,
    pretokenize,
)
from keras_bert_core.text.special_tokens import SpecialTokenIds
from keras_bert_core.text.string_batches import merge_words, route_rows
from keras_bert_core.text.tokenizer import Tokenizer
from keras_bert_core.text.vocabulary.byte_pair_vocabulary import (
    bytes_to_unicode,
    load_bpe_merges,
    load_bpe_vocabulary,
)
from keras_bert_core.text.vocabulary.files import BYTE_PAIR

# The rank of a pair that no merge joins.
_NO_MERGE = 2**31 - 1


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BytePairTokenizer(Tokenizer):
    """Byte-level BPE tokenizer (RoBERTa, GPT-2) that runs inside the TensorFlow graph.

    Strings go in, token ids come out, with the ids of Hugging Face `tokenizers` set up as
    RoBERTa's (`ByteLevel` pre-tokenizer without prefix space, `BPE` model): in a `tf.data`
    pipeline, in a `tf.function` and in an exported SavedModel for TF Serving (TensorFlow
    core ops and tf.text's `RegexSplitWithOffsets`). Special tokens are never produced from
    text; add them with a packer.

    Offsets: `inputs[i][start:end]` (in bytes) are the token's bytes without its leading and
    trailing spaces (RoBERTa's `trim_offsets`).

    Args:
        vocabulary: path to a `vocab.json` (token -> id) or a dict. Every one of the 256
            byte symbols must be in it, and every merge's two symbols and their join.
        merges: path to a `merges.txt` (one `"left right"` pair per line, highest priority
            first) or a list of such strings. The config stores both in memory; a `.keras`
            file holds them as the assets `vocab.json` and `merges.txt` instead (see
            `text.vocabulary.assets`). Both None: no vocabulary until `load_assets` reads one.
        normalization: None, or `"NFC"`: texts are NFC-normalized first (ModernBERT's
            `tokenizer.json` normalizer).
        added_tokens: tokens of the vocabulary found in the (normalized) text before
            pre-tokenization, each becoming its own id (a `tokenizer.json`'s non-special
            added tokens, e.g. ModernBERT's runs of spaces); None or empty: none.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    >>> symbols = bytes_to_unicode()
    >>> vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}
    >>> vocab.update({symbols[b]: 5 + b for b in range(256)})
    >>> merges = ["Ġ t", "h e", "Ġt he", "o w", "Ġ n", "Ġn ow"]
    >>> for merge in merges:
    ...     vocab[merge.replace(" ", "")] = len(vocab)
    >>> tokenizer = BytePairTokenizer(vocab, merges)
    >>> [tokenizer.id_to_token(i) for i in tokenizer("Now the  now")]
    ['N', 'ow', 'Ġthe', 'Ġ', 'Ġnow']
    >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["Now the  now", ""])
    >>> ids.to_list(), starts.to_list(), ends.to_list()
    ([[83, 264, 263, 37, 266], []], [[0, 1, 4, 8, 9], []], [[1, 3, 7, 8, 12], []])
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'Now the  now', b'']
    """

    # RoBERTa's: <s> and </s> take [CLS]'s and [SEP]'s places.
    SPECIAL_TOKENS = {"cls": "<s>", "sep": "</s>", "pad": "<pad>", "mask": "<mask>",
                      "unk": "<unk>"}
    vocabulary_kind = BYTE_PAIR

    @property
    def special_tokens(self):
        """RoBERTa's `<s>`, `</s>`...; BERT's `[CLS]`, `[SEP]`... where the vocabulary has
        those and not RoBERTa's (ModernBERT's byte-level BPE)."""
        vocabulary = self.vocabulary or {}
        if "<s>" not in vocabulary and "[CLS]" in vocabulary:
            return SpecialTokenIds.SPECIAL_TOKENS
        return self.SPECIAL_TOKENS

    def __init__(self, vocabulary, merges, normalization=None, added_tokens=None, **kwargs):
        super().__init__(**kwargs)
        if normalization not in (None, "NFC"):
            raise ValueError(f"normalization must be None or 'NFC', got {normalization!r}")
        self.normalization = normalization
        self.added_tokens = list(added_tokens or [])
        self.vocabulary = self.merges = None
        if vocabulary is not None or merges is not None:
            self._set_vocabulary(vocabulary, merges)

    @property
    def has_vocabulary(self):
        return self.vocabulary is not None

    def _set_vocabulary(self, vocabulary, merges):
        self.vocabulary = load_bpe_vocabulary(vocabulary)
        self.merges = load_bpe_merges(merges)
        self._tokens = {i: token for token, i in self.vocabulary.items()}
        num_ids = max(self.vocabulary.values()) + 1
        symbols = bytes_to_unicode()
        missing = [s for s in symbols.values() if s not in self.vocabulary]
        if missing:
            raise ValueError(f"The vocabulary lacks {len(missing)} of the 256 byte symbols, "
                             f"e.g. {missing[:5]}: it is not a byte-level BPE vocabulary.")
        byte_of = {s: b for b, s in symbols.items()}
        # A token's bytes: special tokens (not made of byte symbols) as their UTF-8.
        token_bytes = [b""] * num_ids
        for token, i in self.vocabulary.items():
            if all(c in byte_of for c in token):
                token_bytes[i] = bytes(byte_of[c] for c in token)
            else:
                token_bytes[i] = token.encode("utf-8")
        # Pair (left id, right id) -> rank; a pair listed twice keeps its last rank, as in
        # the reference.
        ranks = {}
        merged_ids = []
        for rank, merge in enumerate(self.merges):
            left, right = merge.split(" ")
            for token in (left, right, left + right):
                if token not in self.vocabulary:
                    raise ValueError(f"Merge {rank} ({merge!r}) needs {token!r}, which is not "
                                     "in the vocabulary.")
            ranks[self.vocabulary[left] * num_ids + self.vocabulary[right]] = rank
            merged_ids.append(self.vocabulary[left + right])
        self._num_ids = num_ids
        unknown = [t for t in self.added_tokens if t not in self.vocabulary]
        if unknown:
            raise ValueError(f"Added token {unknown[0]!r} is not in the vocabulary.")
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            self._byte_ids = tf.constant([self.vocabulary[symbols[b]] for b in range(256)],
                                         tf.int64)
            self._merged_ids = tf.constant(merged_ids or [0], tf.int64)
            self._merge_ranks = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(ranks), tf.int64),
                    tf.constant(list(ranks.values()), tf.int32),
                ),
                default_value=_NO_MERGE,
            )
            self._token_bytes = tf.constant(token_bytes, tf.string)
            self._token_lengths = tf.constant([len(b) for b in token_bytes], tf.int64)
            self._leading_spaces = tf.constant(
                [len(b) - len(b.lstrip(b" ")) for b in token_bytes], tf.int64)
            self._trailing_spaces = tf.constant(
                [len(b) - len(b.rstrip(b" ")) for b in token_bytes], tf.int64)
            self._added_ids = None
            if self.added_tokens:
                self._added_ids = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(
                        tf.constant(self.added_tokens),
                        tf.constant([self.vocabulary[t] for t in self.added_tokens], tf.int32)),
                    default_value=-1)

    # Vocabulary lookups (Python side).
    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self.vocabulary)

    @staticmethod
    def continues_word(token):
        """Whether `token` continues the word of the token before it: byte-level BPE marks
        a word's first token with the space before it (`Ġ`)."""
        return not token.startswith("\u0120")

    def token_to_id(self, token):
        self._check_vocabulary()
        if token not in self.vocabulary:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return self.vocabulary[token]

    def id_to_token(self, token_id):
        self._check_vocabulary()
        token_id = int(token_id)
        if token_id not in self._tokens:
            raise KeyError(f"Id {token_id} is not in the vocabulary.")
        return self._tokens[token_id]

    def detokenize(self, token_ids):
        """Joins the bytes of the tokens: the input text back, for ids of this tokenizer.

        Args:
            token_ids: int ragged [batch, (tokens)] or dense [batch, tokens] ids (a dense
                batch keeps its padding tokens), or a 1-D tensor of one text's ids.

        Returns:
            string tensor [batch] (or a scalar for 1-D ids) of the joined bytes; special
            tokens are spelled out.
        """
        self._check_vocabulary()
        token_ids = tf.convert_to_tensor(token_ids) if not isinstance(
            token_ids, tf.RaggedTensor) else token_ids
        return tf.strings.reduce_join(tf.gather(self._token_bytes, token_ids), axis=-1)

    def _tokenize(self, text, with_offsets):
        """Ids (and offsets) of each text: ASCII texts with the ASCII pattern, the others
        with the Unicode one, rows back in input order."""
        dtypes = (tf.int32, tf.int64, tf.int64) if with_offsets else (tf.int32,)
        offsets_map = None
        if self.normalization:
            text, offsets_map = normalize(text, self.normalization, with_offsets)
        outputs = route_rows(
            text, tf.strings.regex_full_match(text, ASCII_TEXT),
            self._route(ASCII_PRETOKEN_PATTERN, with_offsets),
            self._route(GPT2_PRETOKEN_PATTERN, with_offsets), dtypes)
        if offsets_map is None:
            return outputs
        ids, starts, ends = outputs
        return ids, source_offsets(offsets_map, starts), source_offsets(offsets_map, ends)

    def _route(self, pattern, with_offsets):
        def tokenize_rows(rows):
            return self._tokenize_rows(rows, pattern, with_offsets)

        if tf.executing_eagerly():
            return tokenize_rows
        # In a graph, one function called by whichever branch of `route_rows` runs (all rows,
        # or two halves) and kept a call: inlined, each route's large graph would be there
        # three times, to trace and instantiate (bench/tokenizer_trace_time.py).
        return tf.function(tokenize_rows, autograph=False,
                           experimental_attributes={"_noinline": True})

    def _tokenize_rows(self, text, pattern, with_offsets):
        if not self.added_tokens:
            return self._tokenize_pieces(text, pattern, with_offsets)
        pieces, piece_starts, piece_ends, is_added = split_added_tokens(
            text, added_token_pattern(self.added_tokens))
        # Added tokens leave their piece empty for BPE and give its one id.
        outputs = self._tokenize_pieces(tf.where(is_added, "", pieces.flat_values), pattern,
                                        with_offsets)
        one_if_added = tf.cast(is_added, tf.int64)
        added = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(self._added_ids.lookup(pieces.flat_values), is_added),
            one_if_added, validate=False)

        def by_text(piece_values, added_values):
            rows = tf.concat([piece_values, added_values], axis=1)
            return merge_words(tf.RaggedTensor.from_row_splits(rows, pieces.row_splits,
                                                               validate=False))

        ids = by_text(outputs[0], added)
        if not with_offsets:
            return (ids,)
        # Each token's piece start, gathered (a ragged + [pieces, 1] sum would trace ragged
        # broadcasting's many shape ops).
        shift = tf.gather(piece_starts.flat_values, outputs[1].value_rowids())
        starts = by_text(outputs[1].with_flat_values(outputs[1].flat_values + shift),
                         added.with_flat_values(tf.boolean_mask(piece_starts.flat_values,
                                                                is_added)))
        ends = by_text(outputs[2].with_flat_values(outputs[2].flat_values + shift),
                       added.with_flat_values(tf.boolean_mask(piece_ends.flat_values, is_added)))
        return ids, starts, ends

    def _tokenize_pieces(self, text, pattern, with_offsets):
        word_starts, word_ends = pretokenize(text, pattern)
        # The words' bytes, taken from the input by their offsets (string ops stop at a NUL
        # byte; these do not), spelled as UTF-8 (one character per byte) to compare them.
        text_bytes = tf.strings.unicode_decode(text, "ISO-8859-1")
        base = tf.gather(text_bytes.row_splits, word_starts.value_rowids())
        word_bytes = tf.gather(text_bytes.flat_values, tf.ragged.range(
            base + word_starts.flat_values, base + word_ends.flat_values))
        # Each distinct word is merged once.
        distinct, index = tf.unique(tf.strings.unicode_encode(word_bytes, "UTF-8"),
                                    out_idx=tf.int32)
        tokens_of_distinct = self._byte_pair_merge(distinct)
        word_tokens = tf.gather(tokens_of_distinct, index)
        ids = merge_words(tf.RaggedTensor.from_row_splits(word_tokens, word_starts.row_splits,
                                                          validate=False))
        if not with_offsets:
            return (ids,)
        token_ids = word_tokens.flat_values
        lengths = tf.gather(self._token_lengths, token_ids)
        ends_in_words = tf.cumsum(lengths)
        # Bytes of earlier words' tokens, to subtract: the total just before each word.
        before_word = tf.gather(tf.pad(ends_in_words, [[1, 0]]), word_tokens.row_splits[:-1])
        token_word = word_tokens.value_rowids()
        ends = ends_in_words - tf.gather(before_word, token_word) + tf.gather(
            word_starts.flat_values, token_word)
        starts = ends - lengths
        # trim_offsets: leading, then trailing spaces leave the span.
        starts = tf.minimum(starts + tf.gather(self._leading_spaces, token_ids), ends)
        ends = tf.maximum(ends - tf.gather(self._trailing_spaces, token_ids), starts)
        return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)

    def _byte_pair_merge(self, words):
        """Token ids (ragged [words, (tokens)], int32) of words given as 1-D strings of one
        character per byte (U+0000 to U+00FF)."""
        word_bytes = tf.strings.unicode_decode(words, "UTF-8")
        num_words = tf.shape(words)[0]
        # int64 ids: pair keys need no casts.
        symbols = tf.gather(self._byte_ids, word_bytes.flat_values)
        symbol_words = tf.cast(word_bytes.value_rowids(), tf.int32)

        def merge_step(symbols, symbol_words, done_symbols, done_words):
            pair_word = symbol_words[:-1]
            keys = symbols[:-1] * self._num_ids + symbols[1:]
            ranks = tf.where(pair_word == symbol_words[1:], self._merge_ranks.lookup(keys),
                             _NO_MERGE)
            # A word without pairs gets the dtype's maximum, _NO_MERGE.
            best = tf.math.unsorted_segment_min(ranks, pair_word, num_words)
            candidates = (ranks == tf.gather(best, pair_word)) & (ranks < _NO_MERGE)
            # Equal ranks are the same pair; where they overlap (a run of equal symbols)
            # take every other one, from the left of the run.
            position = tf.range(tf.size(ranks))
            blocked = ~candidates
            run = tf.cumsum(tf.cast(blocked, tf.int32))
            run_start = tf.math.unsorted_segment_max(
                tf.where(blocked, position, -1), run, tf.size(ranks) + 1)
            selected = candidates & ((position - tf.gather(run_start, run)) % 2 == 1)
            new_symbols = tf.where(
                tf.concat([selected, [False]], 0),
                tf.concat([tf.gather(self._merged_ids, tf.where(selected, ranks, 0)),
                           symbols[-1:]], 0),
                symbols)
            # Words with nothing left to merge are set aside.
            finished = tf.gather(tf.equal(best, _NO_MERGE), symbol_words)
            done = tf.where(finished)[:, 0]
            done_symbols = tf.concat([done_symbols, tf.gather(symbols, done)], 0)
            done_words = tf.concat([done_words, tf.gather(symbol_words, done)], 0)
            kept = tf.where(~finished & ~tf.concat([[False], selected], 0))[:, 0]
            return (tf.gather(new_symbols, kept), tf.gather(symbol_words, kept), done_symbols,
                    done_words)

        # Not a constant of shape [0]: Grappler then folds the loop's outputs to size 0.
        no_symbols, no_words = symbols[:0], symbol_words[:0]
        _, _, done_symbols, done_words = tf.while_loop(
            lambda symbols, *_: tf.size(symbols) > 0,
            merge_step,
            (symbols, symbol_words, no_symbols, no_words),
            shape_invariants=(tf.TensorShape([None]),) * 4,
        )
        # Words leave whole and in order, so each word's tokens are contiguous: place them
        # at their word's position in word order.
        counts = tf.math.unsorted_segment_sum(tf.ones_like(done_words), done_words, num_words)
        row_splits = tf.pad(tf.cumsum(counts), [[1, 0]])
        position = tf.range(tf.size(done_words))
        first = tf.math.unsorted_segment_min(position, done_words, num_words)
        destination = tf.gather(row_splits, done_words) + position - tf.gather(first, done_words)
        tokens = tf.cast(tf.gather(done_symbols, tf.math.invert_permutation(destination)),
                         tf.int32)
        return tf.RaggedTensor.from_row_splits(tokens, tf.cast(row_splits, tf.int64),
                                               validate=False)

    def get_config(self):
        config = super().get_config()
        config.update({"normalization": self.normalization, "added_tokens": self.added_tokens})
        if self.config_holds_vocabulary:  # else the .keras assets hold it (text.vocabulary.assets)
            config.update({"vocabulary": dict(self.vocabulary), "merges": list(self.merges)})
        else:
            config.update({"vocabulary": None, "merges": None})
        return config
