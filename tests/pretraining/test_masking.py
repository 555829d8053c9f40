import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.pretraining.masking import MaskedLMMasker

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"[unused{i}]" for i in range(5)]
VOCAB = SPECIALS + [f"w{i}" for i in range(300)] + [f"##p{i}" for i in range(100)]
PAD, UNK, CLS, SEP, MASK = range(5)
NUM_SPECIAL = len(SPECIALS)
FIRST_CONTINUATION = NUM_SPECIAL + 300


def make_batch(rows=1600, seq_length=128, seed=0):
    """[CLS] a [SEP] b [SEP] [PAD]..., with words of 1-4 pieces and stray specials."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, seq_length), np.int32)
    for r in range(rows):
        length = rng.integers(20, seq_length + 1)
        body = []
        while len(body) < length - 3:
            body.append(rng.integers(NUM_SPECIAL, FIRST_CONTINUATION))
            body += list(rng.integers(FIRST_CONTINUATION, len(VOCAB), rng.integers(0, 4)))
            if rng.random() < 0.02:
                body.append(rng.choice([UNK, 5, 9]))
        body = body[: length - 3]
        cut = len(body) // 2
        ids[r, :length] = [CLS] + body[:cut] + [SEP] + body[cut:] + [SEP]
    return ids, (ids != PAD).astype(np.int32)


@pytest.fixture(scope="module")
def batch():
    return make_batch()


def eligible_mask(ids):
    return ids >= NUM_SPECIAL


def selected_mask(ids, out):
    sel = np.zeros(ids.shape, bool)
    rows, slots = np.nonzero(out["masked_weights"].numpy() > 0)
    sel[rows, out["masked_positions"].numpy()[rows, slots]] = True
    return sel


def test_rates_and_80_10_10_split(batch):
    ids, mask = batch
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=32)
    out = masker(ids, padding_mask=mask, seed=tf.constant([3, 4]))
    new = out["token_ids"].numpy()
    sel = selected_mask(ids, out)
    eligible = eligible_mask(ids)
    assert eligible.sum() > 100_000

    rate = sel.sum() / eligible.sum()
    assert abs(rate - 0.15) < 0.005, rate
    # Specials and padding are never selected; unselected tokens never change.
    assert not (sel & ~eligible).any()
    np.testing.assert_array_equal(new[~sel], ids[~sel])
    # Every row had eligible tokens, so every row predicts at least one.
    assert (out["masked_weights"].numpy().sum(axis=1) >= 1).all()

    became_mask = (new[sel] == MASK).mean()
    kept = (new[sel] == ids[sel]).mean()
    randomized = 1.0 - became_mask - kept
    assert abs(became_mask - 0.8) < 0.01, became_mask
    assert abs(randomized - 0.1) < 0.01, randomized
    assert abs(kept - 0.1) < 0.01, kept
    replaced = sel & (new != MASK) & (new != ids)
    assert (new[replaced] >= NUM_SPECIAL).all(), "random tokens must not be specials"

    # Outputs line up: masked_ids are the original ids at masked_positions, slots ascend.
    positions = out["masked_positions"].numpy()
    weights = out["masked_weights"].numpy()
    np.testing.assert_array_equal(
        out["masked_ids"].numpy(), np.take_along_axis(ids, positions, 1) * (weights > 0)
    )
    # Real slots come first and ascend; unused slots point at position 0.
    assert (np.diff(weights, axis=1) <= 0).all()
    assert (np.diff(positions, axis=1)[weights[:, 1:] > 0] > 0).all()
    assert (positions[weights == 0] == 0).all()
    for key, dtype in [
        ("token_ids", tf.int32),
        ("masked_positions", tf.int32),
        ("masked_ids", tf.int32),
        ("masked_weights", tf.float32),
    ]:
        assert out[key].dtype == dtype


def test_whole_word_masking_masks_whole_words(batch):
    ids, mask = batch
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=32, whole_word_masking=True)
    out = masker(ids, padding_mask=mask, seed=tf.constant([5, 6]))
    sel = selected_mask(ids, out)
    eligible = eligible_mask(ids)
    # A continuation piece that follows an eligible token shares its selection.
    continues = (ids[:, 1:] >= FIRST_CONTINUATION) & eligible[:, :-1]
    np.testing.assert_array_equal(sel[:, 1:][continues], sel[:, :-1][continues])
    assert sel[:, 1:][continues].sum() > 1000, "test data must contain masked multi-piece words"
    # Words here average 2.5 pieces; the rate still centres on 15% of the pieces.
    rate = sel.sum() / eligible.sum()
    assert abs(rate - 0.15) < 0.005, rate


def test_cap_and_sequences_without_eligible_tokens():
    ids = np.array([[CLS] + [20] * 60 + [SEP], [CLS, SEP, UNK, 5] + [PAD] * 58], np.int32)
    out = MaskedLMMasker(VOCAB, max_predictions_per_seq=3)(ids, seed=tf.constant([0, 1]))
    np.testing.assert_array_equal(out["masked_weights"].numpy().sum(axis=1), [3, 0])
    np.testing.assert_array_equal(out["token_ids"].numpy()[1], ids[1])


def test_more_slots_than_tokens():
    ids = np.array([[CLS, 20, 21, SEP]], np.int32)
    out = MaskedLMMasker(VOCAB, max_predictions_per_seq=6)(ids, seed=tf.constant([0, 1]))
    assert out["masked_positions"].shape == (1, 6)
    assert out["masked_weights"].numpy().sum() == 1


def test_seed_determinism(batch):
    ids, mask = batch[0][:64], batch[1][:64]
    masker = MaskedLMMasker(VOCAB, whole_word_masking=True)
    first = masker(ids, mask, seed=tf.constant([1, 2]))
    again = MaskedLMMasker(VOCAB, whole_word_masking=True)(ids, mask, seed=tf.constant([1, 2]))
    other = masker(ids, mask, seed=tf.constant([1, 3]))
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(first["masked_positions"], other["masked_positions"])
    # Without a call seed, the layer's seeded generator gives a reproducible sequence.
    a, b = MaskedLMMasker(VOCAB, seed=9), MaskedLMMasker(VOCAB, seed=9)
    np.testing.assert_array_equal(a(ids)["token_ids"], b(ids)["token_ids"])
    assert not np.array_equal(a(ids)["token_ids"], a(ids)["token_ids"])


def test_tf_data_masks_change_per_epoch_and_repeat_per_seed(batch):
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=20)

    def dataset(seed):
        ids = tf.data.Dataset.from_tensor_slices(batch[0][:64]).batch(16, drop_remainder=True)
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        return tf.data.Dataset.zip(ids, seeds).map(lambda x, s: masker(x, seed=s))

    ds = dataset(11)
    assert ds.element_spec["token_ids"].shape == (16, 128)
    assert ds.element_spec["masked_weights"].shape == (16, 20)
    epoch1 = [e["masked_positions"].numpy() for e in ds]
    epoch2 = [e["masked_positions"].numpy() for e in ds]
    rerun = [e["masked_positions"].numpy() for e in dataset(11)]
    assert not np.array_equal(epoch1, epoch2)
    np.testing.assert_array_equal(epoch1, rerun)


def test_tf_function_and_symbolic_call(batch):
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=8, whole_word_masking=True)
    fn = tf.function(lambda x, s: masker(x, seed=s), jit_compile=False)
    out = fn(tf.constant(batch[0][:4]), tf.constant([1, 1]))
    eager = masker(batch[0][:4], seed=tf.constant([1, 1]))
    np.testing.assert_array_equal(out["token_ids"], eager["token_ids"])

    inputs = keras.Input((128,), dtype="int32")
    spec = masker(inputs)
    assert spec["masked_positions"].shape == (None, 8)
    assert spec["masked_weights"].dtype == "float32"


def test_serialization_round_trip(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCAB) + "\n")
    masker = MaskedLMMasker(str(vocab_file), max_predictions_per_seq=7, whole_word_masking=True,
                            max_ngram=3)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(masker))
    assert isinstance(restored, MaskedLMMasker)
    assert restored.get_config() == masker.get_config()
    assert restored.vocabulary == VOCAB


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        MaskedLMMasker(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(ValueError, match="sum to <= 1"):
        MaskedLMMasker(VOCAB, mask_token_rate=0.9, random_token_rate=0.2)
    with pytest.raises(ValueError, match="max_ngram"):
        MaskedLMMasker(VOCAB, max_ngram=0)


def word_starts(ids):
    """Where words begin: an eligible piece that is not a `##` piece after an eligible one."""
    eligible = eligible_mask(ids)
    continues = np.zeros_like(eligible)
    continues[:, 1:] = (ids[:, 1:] >= FIRST_CONTINUATION) & eligible[:, :-1]
    return eligible & ~continues


def masked_runs(ids, sel, starts):
    """How many maximal runs of 0, 1, 2... consecutive masked units (which begin at
    `starts`) the segments hold: specials and padding end a run."""
    # Each row read as its units and breaks (a break appended to end the row's last run).
    units = np.pad(starts | ~eligible_mask(ids), [[0, 0], [0, 1]], constant_values=True)
    flags = np.pad(starts & sel, [[0, 0], [0, 1]])[units]
    edges = np.diff(np.concatenate([[0], flags.astype(int), [0]]))
    lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return np.bincount(lengths, minlength=8)


def test_ngram_masking_selects_whole_word_ngrams_with_albert_lengths(batch):
    ids, mask = batch
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=24, whole_word_masking=True,
                            max_ngram=3)
    out = masker(ids, padding_mask=mask, seed=tf.constant([3, 4]))
    sel = selected_mask(ids, out)
    eligible = eligible_mask(ids)
    assert not (sel & ~eligible).any()
    # Whole words: a continuation piece shares the selection of the piece before it.
    continues = (ids[:, 1:] >= FIRST_CONTINUATION) & eligible[:, :-1]
    np.testing.assert_array_equal(sel[:, 1:][continues], sel[:, :-1][continues])
    # Budget: the rate centres on 15% of the pieces, and no row passes the slots.
    assert abs(sel.sum() / eligible.sum() - 0.15) < 0.005
    assert sel.sum(axis=1).max() <= 24
    # The 80/10/10 replacement is unchanged.
    new = out["token_ids"].numpy()
    assert abs((new[sel] == MASK).mean() - 0.8) < 0.015
    assert abs((new[sel] == ids[sel]).mean() - 0.1) < 0.015

    # Runs of masked words follow p(n) = (1/n) / (1 + 1/2 + 1/3): 6/11, 3/11, 2/11. Two
    # n-grams side by side read as one longer run, so a few runs pass 3 words.
    runs = masked_runs(ids, sel, word_starts(ids))
    shares = runs / runs.sum()
    np.testing.assert_allclose(shares[1:4], [6 / 11, 3 / 11, 2 / 11], atol=0.03)
    assert shares[4:].sum() < 0.05
    # Single words (max_ngram=1) rarely sit side by side.
    single = MaskedLMMasker(VOCAB, max_predictions_per_seq=24, whole_word_masking=True)
    single_sel = selected_mask(ids, single(ids, mask, seed=tf.constant([3, 4])))
    single_runs = masked_runs(ids, single_sel, word_starts(ids))
    assert single_runs[1] / single_runs.sum() > 0.85


def test_ngrams_of_pieces_without_whole_word_masking(batch):
    ids, mask = batch[0][:400], batch[1][:400]
    out = MaskedLMMasker(VOCAB, max_predictions_per_seq=24, max_ngram=2)(
        ids, mask, seed=tf.constant([5, 6]))
    sel = selected_mask(ids, out)
    assert abs(sel.sum() / eligible_mask(ids).sum() - 0.15) < 0.01
    # Pieces are the units, in n-grams of p(1) = 2/3, p(2) = 1/3 (runs side by side merge)...
    runs = masked_runs(ids, sel, eligible_mask(ids))
    np.testing.assert_allclose(runs[1:3] / runs.sum(), [2 / 3, 1 / 3], atol=0.1)
    # ...and a word may be masked in part.
    continues = (ids[:, 1:] >= FIRST_CONTINUATION) & eligible_mask(ids)[:, :-1]
    assert (sel[:, 1:][continues] != sel[:, :-1][continues]).any()


# Masks of make_batch(rows=3, seq_length=24, seed=1) with seed [7, 8], 4 slots, recorded
# before n-gram masking existed: max_ngram=1 must keep drawing them.
RECORDED_POSITIONS = {
    False: [[2, 14, 20, 0], [7, 16, 19, 0], [1, 15, 16, 0]],
    True: [[14, 15, 20, 0], [19, 20, 21, 0], [1, 2, 3, 0]],
}


@pytest.mark.parametrize("whole_word_masking", [False, True])
def test_max_ngram_1_keeps_the_masks_drawn_before(whole_word_masking):
    ids, mask = make_batch(rows=3, seq_length=24, seed=1)
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=4, max_ngram=1,
                            whole_word_masking=whole_word_masking)
    out = masker(ids, mask, seed=tf.constant([7, 8]))
    np.testing.assert_array_equal(out["masked_positions"], RECORDED_POSITIONS[whole_word_masking])
    default = MaskedLMMasker(VOCAB, max_predictions_per_seq=4,
                             whole_word_masking=whole_word_masking)
    np.testing.assert_array_equal(out["token_ids"],
                                  default(ids, mask, seed=tf.constant([7, 8]))["token_ids"])


def test_ngram_masking_compiles_with_xla_and_runs_in_tf_data(batch):
    ids, mask = batch[0][:32], batch[1][:32]
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=20, whole_word_masking=True,
                            max_ngram=3)

    @tf.function(jit_compile=True)
    def compiled(token_ids, padding_mask, seed):
        return masker(token_ids, padding_mask, seed=seed)

    # XLA draws other random numbers than TensorFlow's kernels; the masks keep the rules.
    out = compiled(tf.constant(ids), tf.constant(mask), tf.constant([1, 2]))
    assert out["masked_positions"].shape == (32, 20) and out["token_ids"].dtype == tf.int32
    sel = selected_mask(ids, out)
    continues = (ids[:, 1:] >= FIRST_CONTINUATION) & eligible_mask(ids)[:, :-1]
    np.testing.assert_array_equal(sel[:, 1:][continues], sel[:, :-1][continues])
    assert (sel.sum(axis=1) >= 1).all() and not (sel & ~eligible_mask(ids)).any()

    rows = tf.data.Dataset.from_tensor_slices((ids, mask)).batch(8, drop_remainder=True)
    seeds = tf.data.Dataset.random(seed=3).batch(2)
    ds = tf.data.Dataset.zip(rows, seeds).map(lambda x, s: masker(*x, seed=s))
    assert ds.element_spec["masked_positions"].shape == (8, 20)
    assert sum(float(e["masked_weights"].numpy().sum()) for e in ds) > 32


@pytest.mark.parametrize("kind", ["bpe", "sentencepiece"])
def test_masks_whole_words_of_roberta_and_albert_vocabularies(kind):
    import os

    from keras_bert_core.text import BytePairTokenizer, SentencePieceTokenizer

    data = os.path.join(os.path.dirname(os.path.dirname(__file__)), "text", "data")
    if kind == "bpe":
        tokenizer = BytePairTokenizer(os.path.join(data, "bpe", "vocab.json"),
                                      os.path.join(data, "bpe", "merges.txt"))
    else:
        tokenizer = SentencePieceTokenizer(os.path.join(data, "sentencepiece", "spiece.model"))
    text = "Returns the concatenation of the representations of its arguments, separated"
    pieces = tokenizer([text] * 400).to_tensor()
    ids = tf.concat([tf.fill([400, 1], tokenizer.cls_id), pieces,
                     tf.fill([400, 1], tokenizer.sep_id)], axis=1).numpy()
    starts = np.array([not tokenizer.continues_word(tokenizer.id_to_token(i))
                       for i in ids[0]])
    # The text's first token starts a word, with or without a marker; specials stand alone.
    starts[[0, 1, -1]] = True
    masker = MaskedLMMasker(tokenizer, max_predictions_per_seq=ids.shape[1],
                            whole_word_masking=True)
    out = masker(ids, seed=tf.constant([3, 4]))
    masked = np.zeros(ids.shape, bool)
    for row, positions, weights in zip(masked, out["masked_positions"].numpy(),
                                       out["masked_weights"].numpy(), strict=True):
        row[positions[weights > 0]] = True
    assert not masked[:, 0].any() and not masked[:, -1].any()  # <s>/[CLS], </s>/[SEP]
    assert 0.1 < masked.mean() * ids.shape[1] / (ids.shape[1] - 2) < 0.2
    word = np.cumsum(starts)
    for row in masked[:50]:
        for w in set(word[row]):  # a word is masked whole or not at all
            assert row[word == w].all()
    replaced = out["token_ids"].numpy()[masked]
    assert 0.7 < (replaced == tokenizer.mask_id).mean() < 0.9
