import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.text.pretraining_data import (
    _pair_instances,
    _read_documents,
    pretraining_dataset,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert_core.text.tokenizer import BertTokenizer

NUM_DOCS, SEQ_LENGTH, BATCH, SLOTS = 90, 32, 8, 5
# Sentence j of document i reads "di sj di sj ...": every token tells where it came from.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB += [f"d{i}" for i in range(NUM_DOCS)] + [f"s{j}" for j in range(12)]
CLS, SEP, MASK = 2, 3, 4


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Three files of 30 documents each, 1-12 sentences of 2-12 tokens."""
    root = tmp_path_factory.mktemp("pretraining")
    rng = np.random.default_rng(0)
    for f in range(3):
        docs = []
        for i in range(f * 30, f * 30 + 30):
            sentences = [" ".join([f"d{i} s{j}"] * rng.integers(1, 7)) for j in range(12)]
            docs.append("\n".join(sentences[: rng.integers(1, 13)]))
        (root / f"part-{f}.txt").write_text("\n\n".join(docs) + "\n")
    return root


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCAB)


def make_dataset(corpus, tokenizer, seed=1, **kwargs):
    return pretraining_dataset(
        str(corpus / "part-*.txt"),
        tokenizer,
        seq_length=SEQ_LENGTH,
        max_predictions_per_seq=SLOTS,
        batch_size=BATCH,
        seed=seed,
        window_size=6,
        shuffle_buffer_size=100,
        **kwargs,
    )


def unmasked_ids(x, y, w):
    """The batch's token ids with the original ids put back at the real masked positions."""
    ids = x["token_ids"].copy()
    rows, slots = np.nonzero(w["mlm"])
    ids[rows, x["masked_positions"][rows, slots]] = y["mlm"][rows, slots]
    return ids


def unmasked_pairs(batches):
    """(tokens_a, tokens_b, label) of every example, with the masked ids put back."""
    pairs = []
    for x, y, w in batches:
        ids = unmasked_ids(x, y, w)
        assert (ids != x["token_ids"]).any()
        for r in range(len(ids)):
            tokens = ids[r][x["padding_mask"][r] == 1]
            first_sep = list(tokens).index(SEP)
            assert tokens[0] == CLS and tokens[-1] == SEP
            expected_segments = [0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1)
            assert list(x["segment_ids"][r][: len(tokens)]) == expected_segments
            pairs.append(
                (
                    [VOCAB[t] for t in tokens[1:first_sep]],
                    [VOCAB[t] for t in tokens[first_sep + 1 : -1]],
                    y["nsp"][r],
                )
            )
    return pairs


def markers(tokens, kind):
    return [int(t[1:]) for t in tokens if t[0] == kind]


def check_pairs(pairs):
    """The google-research rules, read off the tokens' document and sentence markers."""
    assert len(pairs) > 150
    for a, b, label in pairs:
        assert a and b and len(a) + len(b) <= SEQ_LENGTH - 3
        for segment in (a, b):  # Each side is one run of consecutive sentences.
            assert len(set(markers(segment, "d"))) <= 1
            assert markers(segment, "s") == sorted(markers(segment, "s"))
        docs_a, docs_b = set(markers(a, "d")), set(markers(b, "d"))
        if label == 0:
            assert not docs_a or not docs_b or docs_a == docs_b
            if markers(a, "s") and markers(b, "s"):
                assert max(markers(a, "s")) < min(markers(b, "s"))
        else:
            assert not docs_a & docs_b, "a random B comes from another document"
    labels = np.array([label for _, _, label in pairs])
    assert 0.35 < labels.mean() < 0.7
    # Truncation trims from both ends: sentences start with "d" and end with "s".
    assert any(a[0][0] == "s" for a, _, _ in pairs)
    assert any(b[-1][0] == "d" for _, b, _ in pairs)


@pytest.fixture(scope="module")
def dataset(corpus, tokenizer):
    return make_dataset(corpus, tokenizer, seed=5)


def test_dataset_pairs_shapes_and_seeding(corpus, tokenizer):
    ds = make_dataset(corpus, tokenizer, seed=5)
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
    again = next(make_dataset(corpus, tokenizer, seed=5).as_numpy_iterator())
    tf.nest.map_structure(np.testing.assert_array_equal, first_epoch[0], again)
    second_epoch = next(ds.as_numpy_iterator())
    assert not np.array_equal(first_epoch[0][0]["token_ids"], second_epoch[0]["token_ids"])


def pair_instances(doc_lengths, seed, max_num_tokens=20, short_seq_prob=0.0):
    """Runs `_pair_instances` on documents whose token ids count up from 0."""
    sentences = tf.RaggedTensor.from_row_lengths(
        tf.range(sum(sum(d) for d in doc_lengths), dtype=tf.int64),
        [n for d in doc_lengths for n in d],
    )
    docs = tf.RaggedTensor.from_row_lengths(sentences, [len(d) for d in doc_lengths])
    a, b, labels = _pair_instances(
        docs, tf.constant([seed, 0], tf.int64), max_num_tokens, short_seq_prob
    )
    return a.to_list(), b.to_list(), labels.numpy()


def test_trimming_matches_google_research():
    # Two 30-token sentences per document, room for 20: each side keeps 10 tokens, and
    # each trimmed token comes from the front with probability 1/2.
    a, b, labels = pair_instances([[30, 30]] * 40, seed=1)
    assert all(len(x) == 10 and len(y) == 10 for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(x, np.arange(x[0], x[0] + 10)) for x in a + b)
    front_cuts = np.array([x[0] % 30 for x in a])  # Sentences start at multiples of 30.
    assert 8.5 < front_cuts.mean() < 11.5 and front_cuts.std() > 1
    assert labels.all()  # A one-sentence chunk always takes a random B.


def test_short_seq_prob_shortens_pairs():
    docs = [[3] * 100] * 10
    full = pair_instances(docs, seed=2, max_num_tokens=60)
    short = pair_instances(docs, seed=2, max_num_tokens=60, short_seq_prob=1.0)
    full_length, short_length = (
        np.mean([len(a) + len(b) for a, b in zip(*pairs[:2], strict=True)])
        for pairs in (full, short)
    )
    # Chunks fill to 60 tokens but at document ends; short targets are uniform in [2, 60].
    assert full_length > 55 and 25 < short_length < 36
    assert len(short[0]) > 1.5 * len(full[0])


@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_fits_a_two_output_keras_model(dataset):
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
    history = model.fit(dataset.take(3), epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_tfrecords_round_trip(dataset, corpus, tokenizer, tmp_path):
    paths = write_pretraining_tfrecords(
        str(corpus / "part-*.txt"),
        tokenizer,
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
    one_pass = BATCH * sum(1 for _ in dataset)
    assert 1.6 * one_pass < len(records) < 2.5 * one_pass
    features = records[0].features.feature
    assert len(features["input_ids"].int64_list.value) == SEQ_LENGTH
    assert MASK not in features["input_ids"].int64_list.value, "files hold unmasked pairs"

    ds = read_pretraining_tfrecords(
        str(tmp_path / "out" / "pairs-*"),
        tokenizer,
        batch_size=BATCH,
        max_predictions_per_seq=SLOTS,
        seed=4,
    )
    assert ds.element_spec == dataset.element_spec
    first_epoch = list(ds.as_numpy_iterator())
    check_pairs(unmasked_pairs(first_epoch))
    # Masks (and record order) change per epoch and repeat per seed.
    first = first_epoch[0][0]["token_ids"]
    assert not np.array_equal(first, next(iter(ds))[0]["token_ids"])
    again = read_pretraining_tfrecords(
        paths, VOCAB, batch_size=BATCH, max_predictions_per_seq=SLOTS, seed=4
    )
    np.testing.assert_array_equal(first, next(iter(again))[0]["token_ids"])


def masked_lm_rows(batches):
    """The tokens of every masked-LM-only row, masked ids put back; checks the layout."""
    rows = []
    for x, y, w in batches:
        assert set(y) == set(w) == {"mlm"}
        ids = unmasked_ids(x, y, w)
        for r in range(len(ids)):
            tokens = ids[r][x["padding_mask"][r] == 1]
            assert tokens[0] == CLS and list(tokens).count(SEP) == 1 and tokens[-1] == SEP
            assert not x["segment_ids"][r].any()
            rows.append([VOCAB[t] for t in tokens[1:-1]])
    return rows


def test_masked_lm_only_rows_are_runs_of_one_document(corpus, tokenizer, tmp_path):
    ds = make_dataset(corpus, tokenizer, seed=5, next_sentence=False)
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
        str(corpus / "part-*.txt"), tokenizer, str(tmp_path / "mlm"), seq_length=SEQ_LENGTH,
        seed=3, window_size=6, shuffle_buffer_size=100, next_sentence=False)
    record = tf.train.Example.FromString(next(tf.data.TFRecordDataset(paths).as_numpy_iterator()))
    assert "next_sentence_labels" not in record.features.feature
    read = read_pretraining_tfrecords(paths, tokenizer, batch_size=BATCH,
                                      max_predictions_per_seq=SLOTS, seed=4)
    assert read.element_spec == ds.element_spec
    assert len(masked_lm_rows(read.as_numpy_iterator())) > 100


def test_documents_stream_across_blocks(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("\n\na1\na2\n\n\n  \nb1\nb2\nb3\nb4\n\nc1\n \nd1\nd2")
    docs = [list(d) for d in _read_documents(str(path), block_lines=3).as_numpy_iterator()]
    assert docs == [[b"a1", b"a2"], [b"b1", b"b2", b"b3", b"b4"], [b"c1"], [b"d1", b"d2"]]


def test_bad_input_files_are_named(tmp_path, tokenizer):
    def build(files):
        return pretraining_dataset(files, tokenizer, seq_length=SEQ_LENGTH, batch_size=2)

    with pytest.raises(FileNotFoundError, match="nothing-.*txt"):
        build(str(tmp_path / "nothing-*.txt"))
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty.txt.*is empty"):
        build(str(tmp_path / "empty.txt"))
    (tmp_path / "blank.txt").write_text("\n \n\t\n")
    with pytest.raises(ValueError, match="blank.txt.*no sentences"):
        write_pretraining_tfrecords([str(tmp_path / "blank.txt")], tokenizer, str(tmp_path / "o"))
    with pytest.raises(FileNotFoundError, match="nothing"):
        read_pretraining_tfrecords(str(tmp_path / "nothing-*"), VOCAB)
