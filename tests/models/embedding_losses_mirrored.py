"""For test_embedding_losses: a tiny model that outputs [B, C, D] vectors trained with
`ContrastiveLoss` on one device and on a 2-replica `MirroredStrategy` over the two logical
CPUs tests/conftest.py configures, from the same weights on the same global batches; and on
the strategy with gradient caching (`BertEmbedder.compile(mini_batch_size=...)`'s train
step), each replica's 4 examples in mini-batches of 3 and 1."""

import warnings

import keras
import numpy as np
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.models.embedding_losses import ContrastiveLoss
from keras_bert_core.models.gradient_cache import cached_train_step
from tests.training.toys import step_losses

STEPS, GLOBAL_BATCH, COLUMNS, FEATURES, MINI_BATCH = 4, 8, 3, 6, 3
rng = np.random.default_rng(0)
X = rng.normal(size=(STEPS * GLOBAL_BATCH, COLUMNS, FEATURES)).astype("float32")


class GradientCachingModel(keras.Model):
    """Trains with `BertEmbedder`'s gradient-caching step, on a model far cheaper to trace
    than an embedder's encoder."""

    def train_step(self, data):
        return cached_train_step(self, data, MINI_BATCH)


def tiny_model(model_class=keras.Model):
    inputs = keras.Input((COLUMNS, FEATURES))
    hidden = keras.layers.Dense(8, activation="tanh")(inputs)
    return model_class(inputs, keras.layers.Dense(4)(hidden))


def train(strategy, initial, symmetric, model_class=keras.Model):
    """Per-step losses and final weights of `STEPS` SGD steps from `initial`."""
    with strategy.scope():
        model = tiny_model(model_class)
        model.set_weights(initial)
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss=ContrastiveLoss(scale=5.0, symmetric=symmetric))
    return step_losses(model, X, GLOBAL_BATCH, STEPS)


def max_difference(weights, others):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(weights, others, strict=True))


def embedder_jit_compile(strategy):
    """What an embedder compiled with `jit_compile=True` under `strategy` runs, and the
    warnings: the per-replica XLA step cannot hold the loss's cross-replica gather."""
    with strategy.scope(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=16, num_layers=1,
                                                        max_position_embeddings=8))
        model = kbc.BertEmbedder(encoder)
        model.compile(jit_compile=True)
    return {"jit_compile": [model.jit_compile, model.jit_compile_per_replica],
            "warnings": [str(w.message) for w in caught if "gathers" in str(w.message)]}


def closed_form(vectors, scale=5.0):
    """The forward contrastive loss of one batch in numpy: the mean over anchors."""
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    candidates = unit[:, 1:].reshape(-1, unit.shape[-1])
    scores = scale * unit[:, 0] @ candidates.T
    labels = np.arange(len(vectors)) * (vectors.shape[1] - 1)
    top = scores.max(1, keepdims=True)
    log_softmax = scores - top - np.log(np.exp(scores - top).sum(1, keepdims=True))
    return float(-log_softmax[np.arange(len(vectors)), labels].mean())


def results(mirrored):
    keras.utils.set_random_seed(0)
    initial = tiny_model().get_weights()
    result = {"replicas": mirrored.num_replicas_in_sync,
              "embedder_under_xla": embedder_jit_compile(mirrored)}
    for symmetric in (False, True):
        single_losses, single_weights = train(tf.distribute.get_strategy(), initial, symmetric)
        mirrored_losses, mirrored_weights = train(mirrored, initial, symmetric)
        result[f"symmetric={symmetric}"] = {
            "single": single_losses, "mirrored": mirrored_losses,
            "max_weight_difference": max_difference(single_weights, mirrored_weights)}
    cached_losses, cached_weights = train(mirrored, initial, True, GradientCachingModel)
    result["gradient_caching"] = {
        "mirrored": cached_losses,
        "max_weight_difference": max_difference(single_weights, cached_weights)}
    # The first step's loss with the initial weights, over the global batch of 8, and as
    # two replicas would see it if each had only its own 4 examples' negatives.
    model = tiny_model()
    model.set_weights(initial)
    first = model.predict(X[:GLOBAL_BATCH], verbose=0)
    half = GLOBAL_BATCH // 2
    result["global_closed_form"] = closed_form(first)
    result["per_replica_closed_form"] = (closed_form(first[:half])
                                         + closed_form(first[half:])) / 2
    return result
