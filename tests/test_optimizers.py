"""`create_optimizer`, `BertAdamW`, `BertLamb`: weight-decay exclusions, saving, clipping,
gradient accumulation, mixed precision; `WarmupLinearDecay`: the curve, its edge cases, its
config."""

import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.optimizers import (
    BertAdamW,
    BertLamb,
    WarmupLinearDecay,
    create_optimizer,
)
from tests.helpers import global_dtype_policy
from tests.training.toys import toy_classifier, toy_dataset, toy_examples

LEARNING_RATE, WEIGHT_DECAY = 0.1, 0.5


def decay_one_step(model, optimizer):
    """Sets every weight to 1 and applies zero gradients: only weight decay moves a weight.
    Returns {variable path: value after the step} (a scalar per variable)."""
    for variable in model.trainable_variables:
        variable.assign(np.ones(variable.shape, "float32"))
    optimizer.apply([np.zeros(v.shape, "float32") for v in model.trainable_variables],
                    model.trainable_variables)
    return {v.path: np.unique(keras.ops.convert_to_numpy(v)) for v in model.trainable_variables}


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_layer_norm_weights_and_biases_are_not_decayed_but_kernels_and_tables_are(name):
    model = toy_classifier()
    optimizer = create_optimizer(LEARNING_RATE, num_train_steps=10, num_warmup_steps=0,
                                 optimizer=name, weight_decay=WEIGHT_DECAY)
    values = decay_one_step(model, optimizer)
    excluded = {path for path in values if path.rsplit("/", 1)[-1] in ("gamma", "beta", "bias")}
    assert any("norm" in path and path.endswith("gamma") for path in excluded)
    assert any(path.endswith("word_embeddings") for path in values)
    for path, value in values.items():
        expected = 1.0 if path in excluded else 1.0 - LEARNING_RATE * WEIGHT_DECAY
        np.testing.assert_allclose(value, [expected], rtol=1e-6, err_msg=path)


def test_a_saved_model_reloads_with_its_schedule_and_weight_decay_exclusions(tmp_path):
    model = toy_classifier(optimizer=create_optimizer(
        LEARNING_RATE, num_train_steps=10, num_warmup_steps=2, weight_decay=WEIGHT_DECAY))
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    optimizer = restored.optimizer
    assert isinstance(optimizer, BertAdamW)
    assert isinstance(optimizer._learning_rate, WarmupLinearDecay)
    assert optimizer._learning_rate.get_config() == model.optimizer._learning_rate.get_config()
    assert optimizer.epsilon == 1e-6 and optimizer.global_clipnorm == 1.0
    # Behaviour, not just config: a reloaded gamma is still left out of weight decay. A fresh
    # optimizer from the reloaded config, so the step starts from step 0 (peak after warmup).
    fresh = BertAdamW.from_config({**optimizer.get_config(), "learning_rate": LEARNING_RATE})
    values = decay_one_step(restored, fresh)
    gamma = next(path for path in values if path.endswith("attention_norm/gamma"))
    kernel = next(path for path in values if path.endswith("intermediate/kernel"))
    assert values[gamma] == 1.0
    assert values[kernel] == pytest.approx(1.0 - LEARNING_RATE * WEIGHT_DECAY)


def test_lamb_config_round_trips():
    optimizer = create_optimizer(1e-3, 100, 10, optimizer="lamb")
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, BertLamb)
    assert restored.weight_decay_exclusions == optimizer.weight_decay_exclusions
    assert restored.get_config()["learning_rate"] == optimizer.get_config()["learning_rate"]


def test_clipping_is_by_global_norm_and_can_be_turned_off():
    clipped = create_optimizer(1e-3, 100, 10)
    assert clipped.global_clipnorm == 1.0 and clipped.clipnorm is None
    assert create_optimizer(1e-3, 100, 10, clipnorm=None).global_clipnorm is None
    # The global norm of these gradients is 5: both shrink by the same factor.
    grads = clipped._clip_gradients([np.array([3.0], "float32"), np.array([4.0], "float32")])
    np.testing.assert_allclose([float(g[0]) for g in grads], [0.6, 0.8], rtol=1e-6)
    # Below the norm: unchanged; a missing gradient stays missing; a non-finite norm gives NaN.
    grads = clipped._clip_gradients([np.array([0.3], "float32"), None])
    assert float(grads[0][0]) == pytest.approx(0.3) and grads[1] is None
    grads = clipped._clip_gradients([np.array([np.inf], "float32"), np.array([1.0], "float32")])
    assert np.isnan([float(g[0]) for g in grads]).all()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="optimizer must be one of"):
        create_optimizer(1e-3, 100, 10, optimizer="adam")
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be a positive"):
        create_optimizer(1e-3, 100, 10, gradient_accumulation_steps=0)
    with pytest.raises(ValueError, match=r"num_train_steps \(100\) must be larger than "
                                         r"num_warmup_steps \(100\)"):
        create_optimizer(1e-3, 100, 100)


def gradients(model, x, y):
    """Gradients of the mean cross-entropy over the batch `(x, y)`."""
    with tf.GradientTape() as tape:
        loss = keras.ops.mean(keras.losses.sparse_categorical_crossentropy(
            y, model(x), from_logits=True))
    return tape.gradient(loss, model.trainable_variables)


def test_accumulating_k_batches_updates_like_one_batch_k_times_larger():
    k, micro_batch, updates = 4, 4, 2
    x, y = toy_examples(micro_batch * k * updates)
    initial = toy_classifier().get_weights()
    results = []
    for accumulation in (None, k):
        model = toy_classifier()
        model.set_weights(initial)
        # A constant learning rate (end == peak): the same rate for every update of both runs.
        optimizer = create_optimizer(
            1e-3, num_train_steps=updates, num_warmup_steps=0, end_learning_rate=1e-3,
            gradient_accumulation_steps=accumulation)
        batch = micro_batch if accumulation else micro_batch * k
        for start in range(0, len(y), batch):
            rows = slice(start, start + batch)
            batch_x = {name: value[rows] for name, value in x.items()}
            optimizer.apply(gradients(model, batch_x, y[rows]), model.trainable_variables)
        assert int(optimizer.iterations) == updates
        results.append(model.get_weights())
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(initial, results[0], strict=True))
    assert moved > 1e-4  # the comparison below is about real updates
    for one_batch, accumulated in zip(*results, strict=True):
        np.testing.assert_allclose(accumulated, one_batch, atol=2e-6)


def test_with_accumulation_the_schedule_counts_updates():
    optimizer = create_optimizer(1e-3, num_train_steps=10, num_warmup_steps=2,
                                 gradient_accumulation_steps=4)
    schedule = optimizer._learning_rate
    assert (schedule.decay_steps, schedule.warmup_steps) == (40, 8)
    assert optimizer.gradient_accumulation_steps == 4


@pytest.mark.parametrize("policy, name", [("mixed_bfloat16", "lamb"), ("mixed_float16", "adamw")])
def test_mixed_precision_trains_without_nan(policy, name):
    # BertEncoder(dtype=...) leaves the model's own policy float32 (no loss scaling), so
    # mixed precision goes through the global policy.
    with global_dtype_policy(policy):
        model = toy_classifier(optimizer=create_optimizer(1e-3, 4, 1, optimizer=name))
    if policy == "mixed_float16":
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        assert isinstance(model.optimizer.inner_optimizer, BertAdamW)
    history = model.fit(toy_dataset(8, num_examples=32), verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert int(model.optimizer.iterations) == 4
    assert all(np.all(np.isfinite(keras.ops.convert_to_numpy(v))) for v in model.weights)
    x, _ = toy_examples(4)
    assert np.all(np.isfinite(model.predict(x, verbose=0)))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "indexed_slices"])
@pytest.mark.parametrize("clipnorm", [None, 1.0], ids=["unclipped", "clipped"])
def test_bert_adamw_steps_like_keras_adamw(sparse, clipnorm):
    # BertAdamW runs TensorFlow's fused Adam kernel and its own global-norm clipping: the same
    # update as Keras's AdamW. Gradient norms alternate above and below the clipping norm.
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(6, 3)).astype("float32")
    variables = [keras.Variable(initial, name="kernel") for _ in range(2)]
    optimizers = [BertAdamW(1e-2, global_clipnorm=clipnorm),
                  keras.optimizers.AdamW(1e-2, weight_decay=0.01, epsilon=1e-6,
                                         global_clipnorm=clipnorm)]
    for size in (3.0, 0.05, 2.0, 0.1):
        gradient = size * rng.normal(size=initial.shape).astype("float32")
        if sparse:
            # Row 4 twice, as an embedding gradient repeats the rows of repeated tokens.
            # Keras's AdamW gets the dense sum: on repeated rows its sparse update is not
            # the gradient's (it sums squares into the second moment, not the square of the
            # sum: off by 0.012 after 3 steps here) and neither is its clipping norm, while
            # BertAdamW densifies first.
            grads = [tf.IndexedSlices(tf.constant(gradient[[1, 4, 4]]), tf.constant([1, 4, 4]),
                                      tf.constant(initial.shape)),
                     np.zeros_like(gradient)]
            grads[1][[1, 4]] = gradient[1], 2 * gradient[4]
        else:
            grads = [gradient, gradient]
        for optimizer, variable, grad in zip(optimizers, variables, grads, strict=True):
            optimizer.apply([grad], [variable])
    np.testing.assert_allclose(variables[0].numpy(), variables[1].numpy(), atol=1e-6)
    assert not np.allclose(variables[0].numpy(), initial)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_in_the_update_equals_keras_own_pass_on_a_schedule(name):
    # The package's optimizers decay each variable in its update (keras_internals'
    # WeightDecayInUpdateStep); Keras's decay every variable in a pass before it.
    rng = np.random.default_rng(1)
    initial = rng.normal(size=(4, 3)).astype("float32")
    keras_class = {"adamw": keras.optimizers.Adam, "lamb": keras.optimizers.Lamb}[name]
    optimizers = [create_optimizer(1e-1, 6, 2, optimizer=name, weight_decay=0.3, clipnorm=None),
                  *(keras_class(WarmupLinearDecay(1e-1, decay_steps=6, warmup_steps=2),
                                weight_decay=decay, epsilon=1e-6) for decay in (0.3, None))]
    variables = [keras.Variable(initial, name="kernel") for _ in optimizers]
    for _ in range(5):
        gradient = rng.normal(size=initial.shape).astype("float32")
        for optimizer, variable in zip(optimizers, variables, strict=True):
            optimizer.apply([gradient], [variable])
    ours, decayed, undecayed = (variable.numpy() for variable in variables)
    np.testing.assert_allclose(ours, decayed, rtol=1e-5, atol=1e-6)
    assert np.abs(ours - undecayed).max() > 1e-2


def learning_rates(schedule, steps):
    return np.array([float(schedule(step)) for step in steps])


def test_warms_up_linearly_then_decays_linearly_to_the_end_rate():
    schedule = WarmupLinearDecay(1e-3, decay_steps=110, warmup_steps=10, end_learning_rate=1e-5)
    steps = np.arange(0, 130)
    expected = np.where(
        steps < 10, 1e-3 * steps / 10,
        1e-5 + (1e-3 - 1e-5) * np.clip((110 - steps) / 100, 0, 1))
    np.testing.assert_allclose(learning_rates(schedule, steps), expected, rtol=1e-5, atol=1e-9)
    assert float(schedule(10)) == pytest.approx(1e-3)  # continuous at the peak
    assert float(schedule(10_000)) == pytest.approx(1e-5)


def test_without_warmup_it_starts_at_the_peak():
    schedule = WarmupLinearDecay(2e-5, decay_steps=4)
    np.testing.assert_allclose(learning_rates(schedule, range(6)),
                               [2e-5, 1.5e-5, 1e-5, 5e-6, 0, 0], atol=1e-12)


def test_config_round_trips_through_keras_serialization():
    schedule = WarmupLinearDecay(3e-4, decay_steps=1000, warmup_steps=100, end_learning_rate=1e-6)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule))
    assert isinstance(restored, WarmupLinearDecay)
    assert restored.get_config() == schedule.get_config()
    np.testing.assert_allclose(learning_rates(restored, [0, 50, 500]),
                               learning_rates(schedule, [0, 50, 500]))


@pytest.mark.parametrize("kwargs, message", [
    ({"peak_learning_rate": 0.0, "decay_steps": 10}, "peak_learning_rate must be positive"),
    ({"peak_learning_rate": 1e-4, "decay_steps": 10, "warmup_steps": 10},
     "decay_steps (10) must be larger than warmup_steps (10)"),
    ({"peak_learning_rate": 1e-4, "decay_steps": 10, "warmup_steps": -1},
     "warmup_steps must be >= 0"),
    ({"peak_learning_rate": 1e-4, "decay_steps": 10, "end_learning_rate": 1e-3},
     "end_learning_rate must be in [0, peak_learning_rate]"),
])
def test_bad_schedule_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        WarmupLinearDecay(**kwargs)
