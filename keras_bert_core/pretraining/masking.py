"""Dynamic masked-language-model masking that runs in the TensorFlow graph.

Masks are drawn per batch inside `tf.data` (or a Keras model), so every epoch sees new
masks, and every output has a static shape so the training step compiles once.
"""

import numbers
import re

import keras
import tensorflow as tf

from keras_bert_core.text.vocabulary.wordpiece_vocabulary import load_vocabulary

# "[PAD]", "[CLS]", "[unused17]"...: bracketed tokens are never selected or drawn as random ids.
_SPECIAL_TOKEN = re.compile(r"^\[[^\[\]\s]+\]$")


@keras.saving.register_keras_serializable(package="keras_bert_core")
class MaskedLMMasker(keras.layers.Layer):
    """Selects and corrupts tokens for masked-language-model training, BERT style.

    Per sequence it selects `round(mask_rate * n)` of the `n` eligible tokens (at least one
    when any is eligible, at most `max_predictions_per_seq`). Eligible tokens are those that
    are not padding and not special (any bracketed token such as `[CLS]`, `[SEP]`, `[PAD]`,
    `[UNK]`, `[MASK]`, `[unused0]`). Each selected token becomes `[MASK]` with probability
    `mask_token_rate`, a random non-special token with probability `random_token_rate`, and
    stays itself otherwise. With `whole_word_masking`, words (a piece plus its following
    `##` continuation pieces) are selected together, in random order, until the budget is
    reached; the word that would overshoot it is taken with probability (room left / its
    length), so the expected rate stays `mask_rate` of the pieces.

    With `max_ngram > 1` (n-gram masking, as google-research/albert's
    `create_pretraining_data.py` does with its defaults: `--ngram=3`, short n-grams
    favored, whole words), the units selected together are n-grams of consecutive words
    (of pieces without `whole_word_masking`) instead of single ones, with `p(n)`
    proportional to `1/n` for `n = 1..max_ngram`: each row's words are cut into n-grams of
    independently drawn lengths, and n-grams are then selected in random order, under the
    same budget rule as whole words. An n-gram never reaches across a special token or
    padding (it is cut there, so n-grams at the end of a segment can be shorter), where
    ALBERT's script lets n-grams cross `[SEP]`.

    Everything is vectorized over the batch with stateless random ops, so the layer runs in
    `tf.data.Dataset.map`, under `tf.function` and in a Keras model; a given `seed` always
    gives the same masks.

    Args:
        vocabulary: list of tokens, path of a `vocab.txt` (one token a line), or one of the
            package's tokenizers: `BertTokenizer` (WordPiece), `BytePairTokenizer`
            (RoBERTa: `<mask>`, words start with `Ġ`) or `SentencePieceTokenizer` (ALBERT:
            words start with `▁`). A WordPiece vocabulary must hold the BERT special
            tokens `[PAD] [UNK] [CLS] [SEP] [MASK]`.
        max_predictions_per_seq: int, the fixed width `P` of the prediction outputs.
        mask_rate: float, fraction of eligible tokens to select.
        mask_token_rate: float, fraction of selected tokens replaced with `[MASK]`.
        random_token_rate: float, fraction of selected tokens replaced with a random token.
        whole_word_masking: bool, select whole words instead of single pieces.
        max_ngram: int, the longest n-gram of words (or pieces) selected together; 1
            selects single words (or pieces).
        seed: int or None, seeds the layer's generator, used when `call` gets no `seed`.
        **kwargs: base `keras.layers.Layer` arguments (`name`, ...).

    Call arguments:
        token_ids: int tensor `[B, T]`.
        padding_mask: optional int tensor `[B, T]`, nonzero for real tokens.
        seed: optional int tensor of shape `[2]`, a stateless seed; if None the layer's
            `keras.random.SeedGenerator` supplies one (in `tf.data`, pass a seed).

    Returns:
        dict of `token_ids` (int32 `[B, T]`, corrupted), `masked_positions` (int32
        `[B, P]`, ascending, 0 in unused slots), `masked_ids` (int32 `[B, P]`, the original
        ids, 0 in unused slots) and `masked_weights` (float32 `[B, P]`, 1.0 for real
        predictions).

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s"]
    >>> masker = MaskedLMMasker(vocab, max_predictions_per_seq=2)
    >>> out = masker(tf.constant([[2, 5, 6, 8, 7, 3, 0, 0]]), seed=tf.constant([1, 2]))
    >>> out["masked_positions"].shape, float(tf.reduce_sum(out["masked_weights"]))
    (TensorShape([1, 2]), 1.0)

    In a `tf.data` pipeline, draw one seed per batch so that masks change every epoch but
    repeat for the same `seed`:

    >>> ids = tf.data.Dataset.from_tensors(tf.constant([[2, 5, 6, 8, 7, 3, 0, 0]])).repeat(4)
    >>> seeds = tf.data.Dataset.random(seed=7, rerandomize_each_iteration=True).batch(2)
    >>> ds = tf.data.Dataset.zip(ids, seeds).map(lambda x, s: masker(x, seed=s))
    """

    def __init__(
        self,
        vocabulary,
        max_predictions_per_seq=20,
        mask_rate=0.15,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        whole_word_masking=False,
        max_ngram=1,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary = vocabulary
        tokens, special, continues_word, self.mask_id = _token_table(vocabulary)
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_rate = mask_rate
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.whole_word_masking = whole_word_masking
        self.max_ngram = max_ngram
        self.seed = seed
        if not isinstance(max_ngram, numbers.Integral) or max_ngram < 1:
            raise ValueError(f"`max_ngram` must be an integer >= 1, got {max_ngram!r}.")
        if not 0.0 < mask_rate <= 1.0:
            raise ValueError(f"`mask_rate` must be in (0, 1], got {mask_rate}.")
        if (
            mask_token_rate < 0
            or random_token_rate < 0
            or (mask_token_rate + random_token_rate > 1.0)
        ):
            raise ValueError(
                "`mask_token_rate` and `random_token_rate` must be >= 0 and sum to <= 1, "
                f"got {mask_token_rate} and {random_token_rate}."
            )
        # Created eagerly even when the layer is built inside a tf.function.
        with tf.init_scope():
            self._selectable = tf.constant([not s for s in special])
            self._continuation = tf.constant([continues_word(t) for t in tokens])
            self._normal_ids = tf.constant([i for i, s in enumerate(special) if not s], tf.int32)
        self._seed_generator = keras.random.SeedGenerator(seed)

    def call(self, token_ids, padding_mask=None, seed=None):
        if seed is None:
            seed = self._seed_generator.next()
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
        token_ids = tf.cast(token_ids, tf.int32)
        batch_size, seq_length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        num_predictions = self.max_predictions_per_seq

        eligible = tf.gather(self._selectable, token_ids)
        if padding_mask is not None:
            eligible &= tf.cast(padding_mask, tf.int32) > 0
        if self.whole_word_masking:
            # A "##" piece continues the word of the eligible token before it; after a
            # special token or at a truncated segment start it begins a word of its own.
            follows_eligible = tf.pad(eligible[:, :-1], [[0, 0], [1, 0]])
            starts = eligible & ~(tf.gather(self._continuation, token_ids) & follows_eligible)
        else:
            starts = eligible
        if self.max_ngram > 1:
            starts = self._ngram_starts(eligible, starts, seed)

        # Number words 1..W per row (0 = ineligible) and count the pieces of each word.
        word_index = tf.where(eligible, tf.cumsum(tf.cast(starts, tf.int32), axis=1), 0)

        def per_word(reduce, values):
            """`reduce` of `values` over each word's pieces, at every piece of the word."""
            row_offset = tf.range(batch_size)[:, None] * (seq_length + 1)
            by_word = tf.reshape(
                reduce(tf.cast(values, tf.int32), word_index + row_offset,
                       batch_size * (seq_length + 1)),
                [batch_size, seq_length + 1])
            return tf.gather(by_word, word_index, batch_dims=1)

        start_lengths = tf.where(starts, per_word(tf.math.unsorted_segment_sum, eligible), 0)

        # Take words in random order while their pieces fit the budget. The word that
        # crosses the budget is taken with probability (room left / its length), so the
        # expected count matches the budget for whole words too. Always take one word.
        num_eligible = tf.reduce_sum(tf.cast(eligible, tf.float32), axis=1)
        budget = tf.clip_by_value(
            tf.cast(tf.round(num_eligible * self.mask_rate), tf.int32), 1, num_predictions
        )[:, None]
        noise = tf.random.stateless_uniform([batch_size, seq_length], seeds[0])
        order = tf.argsort(tf.where(starts, noise, 2.0), axis=1)
        sorted_lengths = tf.gather(start_lengths, order, batch_dims=1)
        total = tf.cumsum(sorted_lengths, axis=1)
        room = tf.cast(budget - (total - sorted_lengths), tf.float32)
        crossing_taken = (
            (room > 0)
            & (total <= num_predictions)
            & (
                tf.random.stateless_uniform([batch_size, seq_length], seeds[3])
                * tf.cast(sorted_lengths, tf.float32)
                < room
            )
        )
        take = (total <= budget) | crossing_taken | (tf.range(seq_length) == 0)
        take &= sorted_lengths > 0
        chosen_starts = tf.gather(take, tf.argsort(order, axis=1), batch_dims=1)
        selected = eligible & (per_word(tf.math.unsorted_segment_max, chosen_starts) > 0)

        # The first P selected positions, ascending; unused slots point at position 0.
        key = tf.where(selected, seq_length - tf.range(seq_length), 0)
        key = tf.pad(key, [[0, 0], [0, tf.maximum(num_predictions - seq_length, 0)]])
        top_keys, top_positions = tf.math.top_k(key, k=num_predictions)
        weights = tf.cast(top_keys > 0, tf.int32)
        positions = top_positions * weights
        masked_ids = tf.gather(token_ids, positions, batch_dims=1) * weights

        action = tf.random.stateless_uniform([batch_size, num_predictions], seeds[1])
        random_ids = tf.gather(
            self._normal_ids,
            tf.random.stateless_uniform(
                [batch_size, num_predictions],
                seeds[2],
                maxval=tf.size(self._normal_ids),
                dtype=tf.int32,
            ),
        )
        keep_or_random = tf.where(
            action < self.mask_token_rate + self.random_token_rate, random_ids, masked_ids
        )
        new_ids = tf.where(action < self.mask_token_rate, self.mask_id, keep_or_random)
        # Add (new - old) at each real slot; unused slots add 0 to position 0.
        rows = tf.broadcast_to(tf.range(batch_size)[:, None], [batch_size, num_predictions])
        masked_token_ids = token_ids + tf.scatter_nd(
            tf.stack([rows, positions], axis=-1),
            (new_ids - masked_ids) * weights,
            [batch_size, seq_length],
        )
        return {
            "token_ids": masked_token_ids,
            "masked_positions": positions,
            "masked_ids": masked_ids,
            "masked_weights": tf.cast(weights, tf.float32),
        }

    def _ngram_starts(self, eligible, starts, seed):
        """The first tokens of n-grams of the units that begin at `starts` (bool `[B, T]`).

        Unit lengths in n-grams are drawn for the whole row, `T` of them (enough for any
        number of units); their running sums are where n-grams begin, counted in units.
        Every run of eligible tokens begins an n-gram too, so none crosses a special token.
        """
        batch_size, seq_length = tf.shape(starts)[0], tf.shape(starts)[1]
        # A separate stream: with max_ngram=1 nothing is drawn and the masks are unchanged.
        ngram_seed = tf.random.experimental.stateless_fold_in(tf.cast(seed, tf.int64), 4)
        weights = [1.0 / n for n in range(1, self.max_ngram + 1)]
        cumulative = tf.constant(
            [sum(weights[: n + 1]) / sum(weights) for n in range(self.max_ngram - 1)]
        )
        u = tf.random.stateless_uniform([batch_size, seq_length], ngram_seed)
        lengths = 1 + tf.reduce_sum(tf.cast(u[..., None] >= cumulative, tf.int32), axis=-1)
        # Unit k (0-based) begins an n-gram if k is 0 or a running sum of lengths.
        begins = tf.minimum(tf.cumsum(lengths, axis=1, exclusive=True), seq_length)
        row_offset = tf.range(batch_size)[:, None] * (seq_length + 1)
        unit_begins = tf.reshape(
            tf.math.unsorted_segment_max(
                tf.ones_like(begins), begins + row_offset, batch_size * (seq_length + 1)
            ),
            [batch_size, seq_length + 1],
        )
        unit = tf.maximum(tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, 0)
        begins_ngram = tf.gather(unit_begins, unit, batch_dims=1) > 0
        follows_eligible = tf.pad(eligible[:, :-1], [[0, 0], [1, 0]])
        return starts & (begins_ngram | ~follows_eligible)

    def compute_output_spec(self, token_ids, padding_mask=None, seed=None):
        batch_size, seq_length = token_ids.shape
        slots = (batch_size, self.max_predictions_per_seq)
        return {
            "token_ids": keras.KerasTensor((batch_size, seq_length), dtype="int32"),
            "masked_positions": keras.KerasTensor(slots, dtype="int32"),
            "masked_ids": keras.KerasTensor(slots, dtype="int32"),
            "masked_weights": keras.KerasTensor(slots, dtype="float32"),
        }

    def get_config(self):
        config = super().get_config()
        vocabulary = self.vocabulary
        if isinstance(vocabulary, keras.layers.Layer):
            vocabulary = keras.saving.serialize_keras_object(vocabulary)
        elif not isinstance(vocabulary, (list, tuple)):
            vocabulary = load_vocabulary(vocabulary)
        config.update(
            {
                "vocabulary": vocabulary,
                "max_predictions_per_seq": self.max_predictions_per_seq,
                "mask_rate": self.mask_rate,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "whole_word_masking": self.whole_word_masking,
                "max_ngram": self.max_ngram,
                "seed": self.seed,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        if isinstance(config["vocabulary"], dict):
            config = {**config,
                      "vocabulary": keras.saving.deserialize_keras_object(config["vocabulary"])}
        return cls(**config)


def _token_table(vocabulary):
    """`(tokens by id, special flags, continues_word(token), mask id)` of a vocabulary or
    tokenizer."""
    if hasattr(vocabulary, "continues_word"):  # one of the package's tokenizers
        tokenizer = vocabulary
        tokens = [tokenizer.id_to_token(i) for i in range(tokenizer.vocabulary_size())]
        ids = {tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
               tokenizer.mask_id}
        # RoBERTa's and ALBERT's special tokens are these five ids; WordPiece's `[unusedN]`
        # are bracketed.
        special = [i in ids or bool(_SPECIAL_TOKEN.match(t)) for i, t in enumerate(tokens)]
        return tokens, special, tokenizer.continues_word, tokenizer.mask_id
    tokens = load_vocabulary(getattr(vocabulary, "vocabulary", vocabulary))
    special = [bool(_SPECIAL_TOKEN.match(t)) for t in tokens]
    return tokens, special, lambda token: token.startswith("##"), tokens.index("[MASK]")
