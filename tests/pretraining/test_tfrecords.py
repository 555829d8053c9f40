import numpy as np
import tensorflow as tf

from keras_bert_core.pretraining.tfrecords import (
    read_pretraining_tfrecords,
    tfrecords_pair_task,
    write_pretraining_tfrecords,
)
from tests.pretraining.helpers import (
    BATCH,
    MASK,
    SEQ_LENGTH,
    SLOTS,
    VOCAB,
    check_pairs,
    unmasked_pairs,
)


def test_tfrecords_round_trip(pretraining_stream, pretraining_corpus, pretraining_tokenizer,
                              tmp_path):
    paths = write_pretraining_tfrecords(
        str(pretraining_corpus / "part-*.txt"),
        pretraining_tokenizer,
        str(tmp_path / "out" / "pairs"),
        seq_length=SEQ_LENGTH,
        num_shards=2,
        dupe_factor=2,
        seed=3,
        window_size=6,
        shuffle_buffer_size=100,
    )
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "pairs-00000-of-00002.tfrecord",
        "pairs-00001-of-00002.tfrecord",
    ]
    records = [
        tf.train.Example.FromString(r) for r in tf.data.TFRecordDataset(paths).as_numpy_iterator()
    ]
    one_pass = BATCH * sum(1 for _ in pretraining_stream)
    assert 1.6 * one_pass < len(records) < 2.5 * one_pass
    features = records[0].features.feature
    assert len(features["input_ids"].int64_list.value) == SEQ_LENGTH
    assert MASK not in features["input_ids"].int64_list.value, "files hold unmasked pairs"
    assert tfrecords_pair_task(paths) == "next_sentence"
    # google-research's files (BERT's, ALBERT's) hold labels but do not say for which task.
    google_research = tmp_path / "google-research.tfrecord"
    del features["pair_task"]
    with tf.io.TFRecordWriter(str(google_research)) as writer:
        writer.write(records[0].SerializeToString())
    assert tfrecords_pair_task(str(google_research)) == "unknown"

    ds = read_pretraining_tfrecords(
        str(tmp_path / "out" / "pairs-*"),
        pretraining_tokenizer,
        batch_size=BATCH,
        max_predictions_per_seq=SLOTS,
        seed=4,
    )
    assert ds.element_spec == pretraining_stream.element_spec
    first_epoch = list(ds.as_numpy_iterator())
    check_pairs(unmasked_pairs(first_epoch))
    # Masks (and record order) change per epoch and repeat per seed.
    first = first_epoch[0][0]["token_ids"]
    assert not np.array_equal(first, next(iter(ds))[0]["token_ids"])
    again = read_pretraining_tfrecords(
        paths, VOCAB, batch_size=BATCH, max_predictions_per_seq=SLOTS, seed=4
    )
    np.testing.assert_array_equal(first, next(iter(again))[0]["token_ids"])
