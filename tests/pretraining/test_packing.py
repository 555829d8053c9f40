import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.models import BertPretrainer
from keras_bert_core.pretraining.masking import MaskedLMMasker
from keras_bert_core.pretraining.packing import pack_sequences, packed_dataset

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
CLS, SEP = 2, 3


def documents(lengths, seed=0):
    """`[CLS] words [SEP]` id lists of the given total lengths."""
    rng = np.random.default_rng(seed)
    return [[CLS, *rng.integers(5, len(VOCAB), n - 2).tolist(), SEP] for n in lengths]


def unpack(row):
    """The documents of a packed row, as id lists, in order."""
    ids, docs = row["token_ids"], row["padding_mask"]
    return [ids[docs == d].tolist() for d in range(1, docs.max() + 1)]


def test_first_fit_places_each_sequence_in_the_first_row_with_room():
    docs = documents([5, 6, 3, 2, 4])
    rows = list(pack_sequences(docs, seq_length=8))
    # 5 -> row A; 6 -> row B; 3 fills A (emitted); 2 -> B, full (emitted); 4 -> row C.
    assert [unpack(r) for r in rows] == [[docs[0], docs[2]], [docs[1], docs[3]], [docs[4]]]
    assert rows[0]["padding_mask"].tolist() == [1, 1, 1, 1, 1, 2, 2, 2]
    assert rows[2]["padding_mask"].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert rows[2]["token_ids"][4:].tolist() == [0, 0, 0, 0]
    assert all(r["token_ids"].dtype == np.int32 and r["padding_mask"].dtype == np.int32
               for r in rows)


def test_pairs_keep_their_segment_ids():
    pair = ([CLS, 10, SEP, 11, SEP], [0, 0, 0, 1, 1])
    rows = list(pack_sequences([pair, [CLS, 12, SEP]], seq_length=10))
    assert rows[0]["segment_ids"].tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0, 0]
    assert rows[0]["padding_mask"].tolist() == [1, 1, 1, 1, 1, 2, 2, 2, 0, 0]


def test_open_rows_are_bounded_and_no_token_is_lost():
    lengths = np.random.default_rng(1).integers(3, 40, 300)
    docs = documents(lengths)
    for max_open_rows in (1, 4, 64):
        rows = list(pack_sequences(docs, seq_length=64, max_open_rows=max_open_rows))
        packed = sorted(map(tuple, (d for r in rows for d in unpack(r))))
        assert packed == sorted(map(tuple, docs))
        assert all(r["padding_mask"].max() >= 1 for r in rows)
    tight = len(list(pack_sequences(docs, 64, max_open_rows=64)))
    loose = len(list(pack_sequences(docs, 64, max_open_rows=1)))
    assert tight < loose <= len(docs)


@pytest.mark.parametrize("item, problem", [
    (list(range(9)), r"sequence 1 has shape \(9,\)"),
    ([], r"sequence 1 has shape \(0,\)"),
    ([[1, 2], [3, 4]], r"sequence 1 has shape \(2, 2\)"),
    (([CLS, SEP], [0]), r"sequence 1 has 2 token ids but segment ids of shape \(1,\)"),
])
def test_bad_sequences_are_named(item, problem):
    with pytest.raises(ValueError, match=problem):
        list(pack_sequences([[CLS, SEP], item], seq_length=8))


def test_packed_dataset_masks_only_real_tokens_and_zeroes_nsp():
    docs = documents(np.random.default_rng(2).integers(4, 20, 200))
    masker = MaskedLMMasker(VOCAB, max_predictions_per_seq=6)
    data = packed_dataset(docs, seq_length=32, batch_size=4, masker=masker, seed=3)
    x, y, weights = next(iter(data))
    assert x["token_ids"].shape == (4, 32) and x["masked_positions"].shape == (4, 6)
    unmasked = next(iter(packed_dataset(docs, seq_length=32, batch_size=4)))
    positions = x["masked_positions"].numpy()
    real = weights["mlm"].numpy() > 0
    assert real.sum(axis=1).min() >= 1
    original = np.take_along_axis(unmasked["token_ids"].numpy(), positions, axis=1)
    assert (y["mlm"].numpy()[real] == original[real]).all()
    assert (original[real] >= 5).all()  # never [CLS], [SEP] or padding
    assert (np.take_along_axis(x["padding_mask"].numpy(), positions, axis=1)[real] > 0).all()
    assert not weights["nsp"].numpy().any() and not y["nsp"].numpy().any()


def test_a_packed_row_computes_what_separate_rows_would():
    """Same weights, same masked positions: the masked-LM logits and loss match."""
    config = kbc.BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=32)
    model = BertPretrainer(kbc.BertEncoder(config))
    docs = documents([9, 7, 12, 4])
    row = next(pack_sequences(docs, seq_length=32))
    starts = np.flatnonzero(np.diff(row["padding_mask"], prepend=0) > 0)[:4]
    packed_positions = np.array([[1, 3, 10, 12, 16, 29]], "int32")
    packed = model({name: value[None] for name, value in row.items()}
                   | {"masked_positions": packed_positions}, training=False)["mlm"]

    separate_ids = np.zeros((4, 16), "int32")
    for i, doc in enumerate(docs):
        separate_ids[i, :len(doc)] = doc
    doc_of = row["padding_mask"][packed_positions[0]] - 1
    local = packed_positions[0] - starts[doc_of]
    separate_positions = np.zeros((4, 6), "int32")
    separate_positions[doc_of, np.arange(6)] = local
    separate = model({"token_ids": separate_ids, "segment_ids": np.zeros_like(separate_ids),
                      "padding_mask": (separate_ids > 0).astype("int32"),
                      "masked_positions": separate_positions}, training=False)["mlm"]
    expected = np.asarray(separate)[doc_of, np.arange(6)]
    np.testing.assert_allclose(np.asarray(packed)[0], expected, atol=1e-5)

    targets = np.take_along_axis(row["token_ids"][None], packed_positions, axis=1)[0]
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(loss(targets, packed[0])), float(loss(targets, expected)),
                               rtol=1e-5)


@pytest.mark.parametrize("next_sentence", [False, True], ids=["mlm_only", "with_nsp_head"])
def test_pretrainer_fits_on_packed_batches(next_sentence):
    config = kbc.BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=32)
    model = BertPretrainer(kbc.BertEncoder(config), next_sentence=next_sentence)
    docs = documents(np.random.default_rng(4).integers(4, 20, 100))
    data = packed_dataset(docs, 32, 8, masker=MaskedLMMasker(VOCAB, 6), seed=5)
    history = model.fit(data, steps_per_epoch=2, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"][0])
