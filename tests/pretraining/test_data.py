import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.pretraining.data import pretraining_dataset
from keras_bert_core.pretraining.tfrecords import (
    read_pretraining_tfrecords,
    tfrecords_pair_task,
    write_pretraining_tfrecords,
)
from tests.pretraining.helpers import (
    BATCH,
    SEQ_LENGTH,
    SLOTS,
    VOCAB,
    check_pairs,
    make_dataset,
    markers,
    masked_lm_rows,
    unmasked_pairs,
)


def test_dataset_pairs_shapes_and_seeding(pretraining_corpus, pretraining_tokenizer):
    ds = make_dataset(pretraining_corpus, pretraining_tokenizer, seed=5)
    x, y, w = ds.element_spec
    for spec in (x["token_ids"], x["segment_ids"], x["padding_mask"]):
        assert spec.shape == (BATCH, SEQ_LENGTH) and spec.dtype == tf.int32
    assert x["masked_positions"].shape == (BATCH, SLOTS)
    assert y["mlm"].shape == (BATCH, SLOTS) and y["mlm"].dtype == tf.int32
    assert y["nsp"].shape == (BATCH,) and y["nsp"].dtype == tf.int32
    assert w["mlm"].dtype == tf.float32 and w["nsp"].shape == (BATCH,)
    first_epoch = list(ds.as_numpy_iterator())
    check_pairs(unmasked_pairs(first_epoch))

    # The same seed gives the same stream; each new epoch draws new pairs and masks.
    again = next(make_dataset(pretraining_corpus, pretraining_tokenizer,
                              seed=5).as_numpy_iterator())
    tf.nest.map_structure(np.testing.assert_array_equal, first_epoch[0], again)
    second_epoch = next(ds.as_numpy_iterator())
    assert not np.array_equal(first_epoch[0][0]["token_ids"], second_epoch[0]["token_ids"])


@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_fits_a_two_output_keras_model(pretraining_stream):
    inputs = {
        name: keras.Input((SEQ_LENGTH,), dtype="int32", name=name)
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    inputs["masked_positions"] = keras.Input((SLOTS,), dtype="int32", name="masked_positions")
    hidden = keras.layers.Embedding(len(VOCAB), 8)(inputs["token_ids"])
    at_masks = keras.ops.take_along_axis(hidden, inputs["masked_positions"][..., None], axis=1)
    outputs = {
        "mlm": keras.layers.Dense(len(VOCAB), name="mlm")(at_masks),
        "nsp": keras.layers.Dense(2, name="nsp")(hidden[:, 0]),
    }
    model = keras.Model(inputs, outputs)
    loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )
    model.compile("adam", loss={"mlm": loss, "nsp": loss})
    history = model.fit(pretraining_stream.take(3), epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_masked_lm_only_rows_are_runs_of_one_document(pretraining_corpus, pretraining_tokenizer,
                                                      tmp_path):
    ds = make_dataset(pretraining_corpus, pretraining_tokenizer, seed=5, next_sentence=False)
    x, y, w = ds.element_spec
    assert x["token_ids"].shape == (BATCH, SEQ_LENGTH) and y["mlm"].shape == (BATCH, SLOTS)
    rows = masked_lm_rows(ds.as_numpy_iterator())
    assert len(rows) > 100
    for tokens in rows:
        assert tokens and len(tokens) <= SEQ_LENGTH - 2
        assert len(set(markers(tokens, "d"))) == 1  # one document,
        assert markers(tokens, "s") == sorted(markers(tokens, "s"))  # its sentences in order
    # Rows fill up to the sequence length, except at the end of a document.
    assert np.mean([len(tokens) for tokens in rows]) > 0.6 * (SEQ_LENGTH - 2)

    paths = write_pretraining_tfrecords(
        str(pretraining_corpus / "part-*.txt"), pretraining_tokenizer, str(tmp_path / "mlm"),
        seq_length=SEQ_LENGTH, seed=3, window_size=6, shuffle_buffer_size=100, next_sentence=False)
    record = tf.train.Example.FromString(next(tf.data.TFRecordDataset(paths).as_numpy_iterator()))
    assert "next_sentence_labels" not in record.features.feature
    assert tfrecords_pair_task(paths) is None
    read = read_pretraining_tfrecords(paths, pretraining_tokenizer, batch_size=BATCH,
                                      max_predictions_per_seq=SLOTS, seed=4)
    assert read.element_spec == ds.element_spec
    assert len(masked_lm_rows(read.as_numpy_iterator())) > 100


def check_sentence_order_pairs(pairs):
    """B continues A in the same document, and the label says whether they were swapped."""
    assert len(pairs) > 150
    for a, b, label in pairs:
        assert a and b and len(a) + len(b) <= SEQ_LENGTH - 3
        assert len(set(markers(a, "d")) | set(markers(b, "d"))) <= 1
        first, second = (b, a) if label else (a, b)
        if markers(first, "s") and markers(second, "s"):
            # A sentence split in two gives both sides its marker.
            assert max(markers(first, "s")) <= min(markers(second, "s"))
    labels = np.array([label for _, _, label in pairs])
    assert 0.4 < labels.mean() < 0.6


def test_sentence_order_pairs_with_ngram_masking(pretraining_corpus, pretraining_tokenizer,
                                                 tmp_path):
    ds = make_dataset(pretraining_corpus, pretraining_tokenizer, seed=5,
                      pair_task="sentence_order", max_ngram=3)
    # The same targets as next-sentence prediction: BertPretrainer's two-way head trains it.
    assert ds.element_spec == make_dataset(pretraining_corpus, pretraining_tokenizer,
                                           seed=5).element_spec
    check_sentence_order_pairs(unmasked_pairs(ds.take(25).as_numpy_iterator()))

    paths = write_pretraining_tfrecords(
        str(pretraining_corpus / "part-*.txt"), pretraining_tokenizer, str(tmp_path / "sop"),
        seq_length=SEQ_LENGTH, seed=3, window_size=6, shuffle_buffer_size=100,
        pair_task="sentence_order")
    assert tfrecords_pair_task(paths) == "sentence_order"
    read = read_pretraining_tfrecords(paths, pretraining_tokenizer, batch_size=BATCH,
                                      max_predictions_per_seq=SLOTS, seed=4, max_ngram=3)
    assert read.element_spec == ds.element_spec
    check_sentence_order_pairs(unmasked_pairs(read.take(25).as_numpy_iterator()))


def test_pair_task_and_the_older_next_sentence_flag(pretraining_corpus, pretraining_tokenizer):
    with pytest.raises(ValueError, match="contradicts pair_task='sentence_order'"):
        make_dataset(pretraining_corpus, pretraining_tokenizer, next_sentence=False,
                     pair_task="sentence_order")
    with pytest.raises(ValueError, match="pair_task must be one of"):
        make_dataset(pretraining_corpus, pretraining_tokenizer, pair_task="none")


def test_bad_input_files_are_named(tmp_path, pretraining_tokenizer):
    def build(files):
        return pretraining_dataset(files, pretraining_tokenizer, seq_length=SEQ_LENGTH,
                                   batch_size=2)

    with pytest.raises(FileNotFoundError, match="nothing-.*txt"):
        build(str(tmp_path / "nothing-*.txt"))
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty.txt.*is empty"):
        build(str(tmp_path / "empty.txt"))
    (tmp_path / "blank.txt").write_text("\n \n\t\n")
    with pytest.raises(ValueError, match="blank.txt.*no sentences"):
        write_pretraining_tfrecords([str(tmp_path / "blank.txt")], pretraining_tokenizer,
                                    str(tmp_path / "o"))
    with pytest.raises(FileNotFoundError, match="nothing"):
        read_pretraining_tfrecords(str(tmp_path / "nothing-*"), VOCAB)
