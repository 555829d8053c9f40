"""`BertEmbedder` and `SentencePooling`: pooling semantics, every family, text in, training
on columns, prompts, `.keras` and preset round trips."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.layers.fusion import fusion
from keras_bert_core.layers.pooling import SentencePooling
from tests.helpers import encoder_batch

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "car", "fast",
         "slow", "query", ":", "the", "road"]
TEXTS = ["a red car", "the blue car is slow", "fast", "a car on the road"]


def test_pooling_modes_follow_sentence_transformers():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [2, 2, 2, 2, 2]], "int32")  # document ids count as real
    lengths = np.array([3, 5])
    expected = {
        "cls": tokens[:, 0],
        "max": np.stack([tokens[i, :n].max(0) for i, n in enumerate(lengths)]),
        "mean": np.stack([tokens[i, :n].mean(0) for i, n in enumerate(lengths)]),
        "mean_sqrt_len": np.stack([tokens[i, :n].sum(0) / np.sqrt(n)
                                   for i, n in enumerate(lengths)]),
        "last_token": np.stack([tokens[i, n - 1] for i, n in enumerate(lengths)]),
    }
    for mode, vectors in expected.items():
        np.testing.assert_allclose(SentencePooling(mode)(tokens, mask), vectors, atol=1e-6)
    both = SentencePooling(["last_token", "cls"])
    np.testing.assert_allclose(both(tokens, mask), np.concatenate(
        [expected["last_token"], expected["cls"]], -1), atol=1e-6)
    assert SentencePooling.from_config(both.get_config()).modes == ["last_token", "cls"]
    with pytest.raises(ValueError, match="pooling modes must be one or more of"):
        SentencePooling("weightedmean")


FAMILIES = {
    "bert": {},
    "roberta": {"family": "roberta", "position_offset": 2, "type_vocab_size": 1},
    "albert": {"family": "albert", "embedding_size": 16, "num_layer_groups": 1},
    "distilbert": {"family": "distilbert", "type_vocab_size": 0, "pooler": False,
                   "classifier_activation": "relu"},
    "deberta": {"family": "deberta", "type_vocab_size": 0, "pooler": False,
                "classifier_activation": "gelu", "position_embedding": "relative",
                "position_buckets": 4, "max_relative_positions": 16},
}


def tiny(family="bert", vocab_size=None):
    return kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=vocab_size or len(VOCAB), max_position_embeddings=64,
        num_layers=1, hidden_size=32, num_heads=2, intermediate_size=64, **FAMILIES[family]))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_embeds_and_padding_changes_nothing(family):
    embedder = kbc.BertEmbedder(tiny(family, vocab_size=100), pooling=["mean", "max"],
                                dense_layers=[{"units": 8, "activation": "relu"}])
    batch = encoder_batch(3, 10)
    if family in ("roberta", "distilbert", "deberta"):
        batch["segment_ids"] = np.zeros_like(batch["segment_ids"])
    vectors = np.asarray(embedder(batch))
    assert vectors.shape == (3, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    padded = {name: np.pad(value, [(0, 0), (0, 6)]) for name, value in batch.items()}
    np.testing.assert_allclose(np.asarray(embedder(padded)), vectors, atol=1e-5)
    with fusion(unpadded=False):  # the feed-forward on every position, padding included
        np.testing.assert_allclose(np.asarray(embedder(padded)), vectors, atol=1e-5)


@pytest.fixture(scope="module")
def embedder():
    return kbc.BertEmbedder(
        tiny(), pooling="mean", dense_layers=[16, {"units": 8, "activation": "linear",
                                                 "use_bias": False}],
        prompts={"query": "query : ", "document": ""}, default_prompt_name="query",
        similarity="dot", preprocessor=kbc.BertPreprocessor(VOCAB, seq_length=16))


def test_predict_takes_text_and_prompts(embedder):
    vectors = embedder.predict(TEXTS, batch_size=2, verbose=0)  # default prompt: query
    assert vectors.shape == (4, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, embedder.predict(
        ["query : " + text for text in TEXTS], prompt="", verbose=0), atol=1e-6)
    plain = embedder.predict(TEXTS, prompt_name="document", verbose=0)
    np.testing.assert_allclose(plain, embedder.predict(TEXTS, prompt="", verbose=0), atol=1e-6)
    assert np.abs(plain - vectors).max() > 1e-3
    # Padded to each batch's longest: a text alone gives its vector in any batch.
    np.testing.assert_allclose(embedder.predict(TEXTS[2:3], verbose=0), vectors[2:3],
                               atol=1e-5)
    assert embedder.preprocess_text(TEXTS[2:3], static_shape=False)["token_ids"].shape[1] == 8
    with pytest.raises(ValueError, match="has no prompt 'passage'; its prompts are"):
        embedder.predict(TEXTS, prompt_name="passage", verbose=0)
    np.testing.assert_allclose(embedder.similarity(vectors, vectors), vectors @ vectors.T,
                               rtol=1e-6)


class ShapeRecordingLoss(keras.losses.Loss):
    """Mean squared distance of column 0 to column 1; records the shapes it saw."""

    shapes = []

    def call(self, y_true, y_pred):
        ShapeRecordingLoss.shapes.append((tuple(y_true.shape), tuple(y_pred.shape)))
        return tf.reduce_sum(tf.square(y_pred[:, 0] - y_pred[:, 1]), axis=-1)


def test_fit_embeds_each_column_and_the_loss_sees_batch_columns_dim():
    model = kbc.BertEmbedder(tiny(), preprocessor=kbc.BertPreprocessor(VOCAB, seq_length=8))
    assert type(model.loss).__name__ == "ContrastiveLoss"
    model.compile(loss=ShapeRecordingLoss(), run_eagerly=True)
    ShapeRecordingLoss.shapes.clear()
    columns = (TEXTS, TEXTS[::-1], ["a", "b", "c", "d"])
    history = model.fit(columns, batch_size=2, epochs=1, verbose=0)  # no targets
    assert np.isfinite(history.history["loss"]).all()
    assert ShapeRecordingLoss.shapes == [((2,), (2, 3, 32))] * 2
    # A dataset of (columns, scores) is packed the same way, each column [batch, seq].
    data = tf.data.Dataset.from_tensor_slices((columns, [0.5, 1.0, 0.0, 1.0])).batch(2)
    ids = model.preprocess_text(next(iter(data))[0], static_shape=True)["token_ids"]
    assert [column.shape for column in ids] == [(2, 8)] * 3
    # The training output of one example is the predicted vector of each of its texts.
    pair = model.predict((TEXTS[:2], TEXTS[2:]), verbose=0)
    np.testing.assert_allclose(pair[:, 1], model.predict(TEXTS[2:], verbose=0), atol=1e-5)


def test_keras_file_and_preset_round_trips(embedder, tmp_path):
    expected = embedder.predict(TEXTS, verbose=0)
    path = str(tmp_path / "embedder.keras")
    embedder.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored.predict(TEXTS, verbose=0), expected, atol=1e-6)
    assert (restored.prompts, restored.default_prompt_name, restored.similarity_name) == (
        embedder.prompts, "query", "dot")
    folder = kbc.save_to_preset(embedder, None, tmp_path / "preset")
    loaded, preprocessor = kbc.from_preset(folder)
    assert type(loaded).__name__ == "BertEmbedder" and preprocessor.seq_length == 16
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), expected, atol=1e-6)


def test_length_buckets_pad_each_column_alone_and_change_no_loss_or_gradient():
    config = dict(dropout=0.0, attention_dropout=0.0)
    encoder = kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=len(VOCAB), max_position_embeddings=64, num_layers=1,
        hidden_size=32, num_heads=2, intermediate_size=64, **config))
    model = kbc.BertEmbedder(encoder, preprocessor=kbc.BertPreprocessor(VOCAB, seq_length=32))
    assert kbc.models.embedder.auto_length_buckets(32) == (8, 16, 24, 32)
    columns = (["a red car", "fast", "the road", "blue"],
               ["the blue car is slow " * 3, "a car on the road", "red " * 12, "slow car"])
    bucketed = model.preprocess_text(columns, static_shape=True)
    # Queries (5 wordpieces at most) in the 8 bucket, documents (17) in the 24 one.
    assert [ids.shape for ids in bucketed["token_ids"]] == [(4, 8), (4, 24)]
    model.length_buckets = None
    padded = model.preprocess_text(columns, static_shape=True)
    assert padded["token_ids"].shape == (4, 2, 32)

    def loss_and_gradients(x):
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x, None, model(x, training=True))
        gradients = tape.gradient(loss, model.trainable_weights)
        return [loss, *map(tf.convert_to_tensor, gradients)]

    initial = [np.asarray(weight) for weight in model.trainable_weights]
    expected = loss_and_gradients(padded)
    for a, b in zip(loss_and_gradients(bucketed), expected, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=2e-5)
    # `fit` (bucketed) takes the step of the padded batch: same loss, same update.
    model.length_buckets = "auto"
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    history = model.fit(columns, batch_size=4, epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [expected[0]], rtol=1e-5)
    for before, after, gradient in zip(initial, model.trainable_weights, expected[1:],
                                       strict=True):
        np.testing.assert_allclose(after, before - 0.1 * np.asarray(gradient), atol=1e-5)
    assert kbc.BertEmbedder.from_config(model.get_config()).length_buckets == "auto"
    with pytest.raises(ValueError, match="length_buckets must be"):
        kbc.BertEmbedder(tiny(), length_buckets=[0, 8])


def test_gradient_caching_takes_the_whole_batch_step_in_mini_batches():
    # GradCache (`compile(mini_batch_size=3)`: mini-batches of 3, 3 and 1) gives the loss
    # and gradients of the whole batch of 7: each anchor's negatives are all 14 candidates.
    from keras_bert_core.models.gradient_cache import random_states

    def embedder(dropout):
        config = dict(dropout=dropout, attention_dropout=dropout)
        return kbc.BertEmbedder(kbc.BertEncoder(kbc.BertConfig.preset(
            "tiny", vocab_size=len(VOCAB), max_position_embeddings=64, num_layers=1,
            hidden_size=32, num_heads=2, intermediate_size=64, **config)),
            preprocessor=kbc.BertPreprocessor(VOCAB, seq_length=32))

    words = VOCAB[5:]
    columns = tuple([" ".join(words[(i * 3 + c + k) % len(words)] for k in range(2 + i % 4))
                     for i in range(7)] for c in range(3))  # anchor, positive, hard negative
    model = embedder(0.0)
    x = model.preprocess_text(columns, static_shape=True)
    with tf.GradientTape() as tape:
        loss = model.compute_loss(x, None, model(x, training=True))
    gradients = [np.asarray(tf.convert_to_tensor(g))
                 for g in tape.gradient(loss, model.trainable_weights)]
    initial = [np.asarray(weight) for weight in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.SGD(1.0), mini_batch_size=3)
    history = model.fit(columns, batch_size=7, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [float(loss)], rtol=1e-5)
    for before, after, gradient in zip(initial, model.trainable_weights, gradients,
                                       strict=True):
        np.testing.assert_allclose(before - np.asarray(after), gradient, atol=1e-5)
    assert model.get_compile_config()["mini_batch_size"] == 3

    # With dropout, the second pass draws the first pass's masks: one mini-batch of the
    # whole batch takes exactly the step without caching (the same seeds).
    plain, cached = embedder(0.1), embedder(0.1)
    cached.set_weights(plain.get_weights())
    for mine, theirs in zip(random_states(cached), random_states(plain), strict=True):
        mine.assign(theirs)
    plain.compile(optimizer=keras.optimizers.SGD(1.0), run_eagerly=True)  # no tracing
    cached.compile(optimizer=keras.optimizers.SGD(1.0), mini_batch_size=7, run_eagerly=True)
    losses = [m.fit(columns, batch_size=7, shuffle=False, verbose=0).history["loss"]
              for m in (plain, cached)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    for a, b in zip(plain.get_weights(), cached.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError, match="mini_batch_size must be"):
        cached.compile(mini_batch_size=0)
