"""Embedding losses: each equals its closed form in numpy on fixed vectors (written in
sentence-transformers' own layout: positives first, then each column of hard negatives),
serializes, says what is wrong with its input, and under a 2-replica `MirroredStrategy`
trains as one device with the global batch, negatives from both replicas."""

import json

import keras
import numpy as np
import pytest

from keras_bert_core.models.embedding_losses import (
    ContrastiveLoss,
    CosineSimilarityLoss,
    MatryoshkaLoss,
    TripletLoss,
)
from tests.models import embedding_losses_mirrored

RNG = np.random.default_rng(7)
VECTORS = RNG.normal(size=(5, 4, 6)).astype("float32")  # 5 examples, 4 columns, width 6
SCORES = np.array([0.9, 0.1, 0.5, 1.0, 0.0], "float32")


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def cross_entropy(scores, labels):
    top = scores.max(1, keepdims=True)
    log_softmax = scores - top - np.log(np.exp(scores - top).sum(1, keepdims=True))
    return -log_softmax[np.arange(len(scores)), labels]


def ranking_closed_form(vectors, scale, symmetric=False):
    """sentence-transformers' MultipleNegatives(Symmetric)RankingLoss, as numpy."""
    anchors = unit(vectors[:, 0])
    candidates = np.concatenate([unit(vectors[:, c]) for c in range(1, vectors.shape[1])])
    scores = scale * anchors @ candidates.T
    labels = np.arange(len(vectors))
    forward = cross_entropy(scores, labels).mean()
    if not symmetric:
        return forward
    backward = cross_entropy(scores[:, :len(vectors)].T, labels).mean()
    return (forward + backward) / 2


def value(loss, y_pred, y_true=None):
    return float(loss(np.zeros(len(y_pred)) if y_true is None else y_true, y_pred))


@pytest.mark.parametrize("columns", [2, 3, 4])
@pytest.mark.parametrize("symmetric", [False, True])
def test_contrastive_loss_is_its_closed_form(columns, symmetric):
    vectors = VECTORS[:, :columns]
    expected = ranking_closed_form(vectors, 20.0, symmetric)
    loss = ContrastiveLoss(symmetric=symmetric)
    assert loss.scale == 20.0
    np.testing.assert_allclose(value(loss, vectors), expected, rtol=1e-5)
    np.testing.assert_allclose(value(ContrastiveLoss(scale=3.0, symmetric=symmetric), vectors),
                               ranking_closed_form(vectors, 3.0, symmetric), rtol=1e-5)


def test_hard_negatives_are_candidates_and_the_labels_may_be_left_out():
    with_negatives = value(ContrastiveLoss(), VECTORS[:, :3])
    assert with_negatives > value(ContrastiveLoss(), VECTORS[:, :2])  # more to beat
    model = keras.Sequential([keras.Input((3, 6)), keras.layers.Dense(6)])
    model.compile(loss=ContrastiveLoss())
    model.set_weights([np.eye(6, dtype="float32"), np.zeros(6, "float32")])
    # fit/evaluate without y: the loss takes no labels.
    np.testing.assert_allclose(model.evaluate(VECTORS[:, :3], batch_size=5, verbose=0),
                               with_negatives, rtol=1e-5)


def test_cosine_similarity_loss_is_the_squared_error_of_the_cosine():
    cosine = (unit(VECTORS[:, 0]) * unit(VECTORS[:, 1])).sum(-1)
    np.testing.assert_allclose(value(CosineSimilarityLoss(), VECTORS[:, :2], SCORES),
                               np.mean((cosine - SCORES) ** 2), rtol=1e-5)
    with pytest.raises(ValueError, match="CosineSimilarityLoss needs labels"):
        CosineSimilarityLoss()(None, VECTORS)


@pytest.mark.parametrize("distance, margin", [("euclidean", 5.0), ("cosine", 0.5),
                                              ("manhattan", 2.0)])
def test_triplet_loss_is_its_closed_form(distance, margin):
    anchors, positives, negatives = VECTORS[:, 0], VECTORS[:, 1], VECTORS[:, 2]

    def d(a, b):  # torch's pairwise_distance adds 1e-6 to the difference
        if distance == "cosine":
            return 1 - (unit(a) * unit(b)).sum(-1)
        if distance == "manhattan":
            return np.abs(a - b + 1e-6).sum(-1)
        return np.linalg.norm(a - b + 1e-6, axis=-1)

    expected = np.maximum(d(anchors, positives) - d(anchors, negatives) + margin, 0).mean()
    assert 0 < expected  # some triplets count
    loss = TripletLoss(margin=margin, distance=distance)
    np.testing.assert_allclose(value(loss, VECTORS[:, :3]), expected, rtol=1e-5)
    assert TripletLoss().margin == 5.0 and TripletLoss().distance == "euclidean"


def test_matryoshka_loss_sums_the_weighted_losses_of_the_cut_vectors():
    inner = ContrastiveLoss(scale=10.0)
    loss = MatryoshkaLoss(inner, dims=(6, 4, 2), weights=(1.0, 0.5, 0.25))
    expected = sum(w * ranking_closed_form(VECTORS[:, :3, :d], 10.0)
                   for d, w in ((6, 1.0), (4, 0.5), (2, 0.25)))
    np.testing.assert_allclose(value(loss, VECTORS[:, :3]), expected, rtol=1e-5)
    scored = MatryoshkaLoss(CosineSimilarityLoss(), dims=(6, 3))
    np.testing.assert_allclose(
        value(scored, VECTORS[:, :2], SCORES),
        value(CosineSimilarityLoss(), VECTORS[:, :2], SCORES)
        + value(CosineSimilarityLoss(), VECTORS[:, :2, :3], SCORES), rtol=1e-5)


@pytest.mark.parametrize("loss", [
    ContrastiveLoss(scale=7.0, symmetric=True), CosineSimilarityLoss(),
    TripletLoss(margin=1.5, distance="cosine"),
    MatryoshkaLoss(ContrastiveLoss(scale=9.0), dims=(6, 3), weights=(1.0, 2.0))])
def test_losses_serialize_by_their_registered_names(loss):
    config = keras.saving.serialize_keras_object(loss)
    assert config["registered_name"].startswith("keras_bert_core>")
    restored = keras.saving.deserialize_keras_object(json.loads(json.dumps(config)))
    assert type(restored) is type(loss)
    assert restored.get_config() == loss.get_config()
    y_true = SCORES if isinstance(loss, CosineSimilarityLoss) else None
    assert value(restored, VECTORS[:, :3], y_true) == value(loss, VECTORS[:, :3], y_true)


@pytest.mark.parametrize("make, y_pred, message", [
    (ContrastiveLoss, VECTORS[:, :1], "ContrastiveLoss needs at least 2 columns"),
    (TripletLoss, VECTORS[:, :2], "TripletLoss needs at least 3 columns"),
    (ContrastiveLoss, VECTORS[:, 0], r"shape \[batch, columns, dim\]"),
    (lambda: TripletLoss(distance="dot"), VECTORS, "unknown triplet distance 'dot'"),
    (lambda: MatryoshkaLoss(ContrastiveLoss(), dims=(8, 4)), VECTORS, "past the vectors' width 6"),
    (lambda: MatryoshkaLoss(ContrastiveLoss(), dims=(4, 2), weights=(1.0,)), VECTORS,
     "2 dims .* but 1 weights"),
    (lambda: MatryoshkaLoss("mse", dims=(4,)), VECTORS, "wraps one of keras_bert_core's"),
])
def test_bad_inputs_are_named(make, y_pred, message):
    with pytest.raises(ValueError, match=message):
        value(make(), y_pred)


def test_two_replicas_train_as_one_device_with_the_global_batch(two_cpu_strategy):
    result = embedding_losses_mirrored.results(two_cpu_strategy)
    assert result["replicas"] == 2
    for symmetric in (False, True):
        run = result[f"symmetric={symmetric}"]
        # Same weights, same global batches: the losses and the weights agree step for step.
        np.testing.assert_allclose(run["mirrored"], run["single"], atol=1e-5)
        assert len(set(np.round(run["single"], 3))) == len(run["single"])  # steps differ
        assert run["max_weight_difference"] < 1e-5
    # The first step's loss is the one over all 8 examples, not each replica's 4 alone.
    first = result["symmetric=False"]["mirrored"][0]
    np.testing.assert_allclose(first, result["global_closed_form"], rtol=1e-5)
    assert abs(first - result["per_replica_closed_form"]) > 0.1
    # Gradient caching under the strategy: each replica's mini-batches of 3 and 1, the
    # symmetric loss over the global batch: one device's whole-batch steps.
    cached = result["gradient_caching"]
    np.testing.assert_allclose(cached["mirrored"], result["symmetric=True"]["single"], atol=1e-5)
    assert cached["max_weight_difference"] < 1e-5
    # --xla under the strategy: no per-replica XLA step (it cannot gather), said once.
    assert result["embedder_under_xla"]["jit_compile"] == [False, False]
    assert len(result["embedder_under_xla"]["warnings"]) == 1
