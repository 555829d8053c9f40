"""The private Keras names of `keras_bert_core.keras_internals`, one test each: a Keras upgrade
that moves one fails here, with its name."""

import keras
import numpy as np
import pytest

from keras_bert_core import keras_internals


def test_global_state_tells_when_a_keras_file_is_written(tmp_path):
    name = "keras.src.backend.common.global_state"
    assert keras_internals._keras_global_state is not None, f"{name} cannot be imported"
    seen = []

    class Recorder(keras.layers.Layer):
        def get_config(self):
            seen.append(keras_internals.writing_keras_file())
            return super().get_config()

    model = keras.Sequential([keras.Input((2,)), Recorder()])
    model.get_config()
    model.save(tmp_path / "model.keras")
    assert seen[0] is False, f"{name} says a .keras file is written outside a save"
    assert True in seen[1:], f"{name}: the shared-objects scope no longer marks a .keras save"
    assert keras_internals.writing_keras_file() is False


def test_loss_tracker_is_the_loss_that_fit_logs():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    tracker = keras_internals.loss_tracker(model)
    assert isinstance(tracker, keras.metrics.Mean) and tracker.name == "loss", \
        "Trainer._loss_tracker is no longer the Mean metric named 'loss'"
    assert any(metric is tracker for metric in model.metrics), \
        "Trainer._loss_tracker is not among the metrics fit reports"
    model.fit(np.ones((4, 2)), np.zeros((4, 1)), verbose=0)
    assert float(tracker.result()) > 0, "Trainer._loss_tracker no longer tracks fit's loss"


def test_flatten_layers_walks_nested_layers():
    inner = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="inner_dense")])
    outer = keras.Sequential([keras.Input((2,)), inner, keras.layers.Dense(1, name="top")])
    layers = keras_internals.sublayers(outer)
    names = sorted(layer.name for layer in layers if isinstance(layer, keras.layers.Dense))
    assert names == ["inner_dense", "top"] and any(layer is inner for layer in layers), \
        f"Layer._flatten_layers no longer lists every nested layer: {names}"
    assert not any(layer is outer for layer in layers)


def test_iterations_counts_every_batch_under_gradient_accumulation():
    weight = keras.Variable([1.0])
    optimizer = keras.optimizers.SGD(gradient_accumulation_steps=2)
    optimizer.build([weight])
    for _ in range(3):
        optimizer.apply([np.ones(1, "float32")], [weight])
    counted = int(keras.ops.convert_to_numpy(keras_internals.batch_counter(optimizer)))
    assert counted == 3, f"BaseOptimizer._iterations counted {counted} of 3 batches"
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == 1


def test_adam_moments_are_the_slots_of_each_variable():
    weights = [keras.Variable([1.0, 2.0]), keras.Variable([3.0])]
    optimizer = keras.optimizers.Adam(beta_1=0.9, beta_2=0.999)
    optimizer.build(weights)
    optimizer.apply([np.array([1.0, -2.0], "float32"), np.array([4.0], "float32")], weights)
    for weight, gradient in zip(weights, ([1.0, -2.0], [4.0]), strict=True):
        momentum, velocity = keras_internals.adam_moments(optimizer, weight)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(momentum), 0.1 * np.array(gradient), rtol=1e-5,
            err_msg="Adam._get_variable_index / _momentums no longer give the first moment")
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(velocity), 0.001 * np.square(gradient), rtol=1e-5,
            err_msg="Adam._get_variable_index / _velocities no longer give the second moment")


def test_a_moved_name_fails_with_its_name():
    class Moved:
        pass

    try:
        keras_internals.loss_tracker(Moved())
    except RuntimeError as e:
        assert "Moved._loss_tracker" in str(e) and "keras_internals.py" in str(e)
    else:
        raise AssertionError("a missing private name must raise")


def test_layers_take_string_inputs_as_given():
    import tensorflow as tf

    class Lengths(keras.layers.Layer):
        def call(self, texts):
            return tf.strings.length(texts)

    layer = Lengths(dtype="int32")
    keras_internals.take_inputs_as_given(layer)
    assert layer(["ab", "abc"]).numpy().tolist() == [2, 3], \
        "Layer._convert_input_args / _allow_non_tensor_positional_args no longer let a " \
        "layer take a list of strings"


def test_weight_decay_is_applied_once_in_the_update_and_honours_exclusions():
    calls = []

    class Spy(keras.optimizers.SGD):
        def _apply_weight_decay(self, variables):
            calls.append(len(variables))
            super()._apply_weight_decay(variables)

    class DecayingSGD(keras_internals.WeightDecayInUpdateStep, keras.optimizers.SGD):
        def update_step(self, gradient, variable, learning_rate):
            self.decay_weight(variable, learning_rate)
            super().update_step(gradient, variable, learning_rate)

    kernel, bias = keras.Variable([1.0], name="kernel"), keras.Variable([1.0], name="bias")
    Spy(weight_decay=0.1).apply([np.zeros(1, "float32")], [keras.Variable([1.0])])
    assert calls == [1], "BaseOptimizer._apply_weight_decay is no longer Keras's weight-decay " \
        "pass: WeightDecayInUpdateStep would decay twice"
    optimizer = DecayingSGD(learning_rate=0.5, weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply([np.zeros(1, "float32")] * 2, [kernel, bias])
    assert float(kernel.numpy()[0]) == pytest.approx(0.95), "decayed other than once"
    assert float(bias.numpy()[0]) == 1.0, \
        "BaseOptimizer._use_weight_decay no longer honours exclude_from_weight_decay"


def test_saving_lists_the_attributes_it_skips_once_per_kind(tmp_path):
    from keras.src.saving import saving_lib

    name = "keras.src.saving.saving_lib.get_attr_skipset"
    skipset = getattr(saving_lib, "get_attr_skipset", None)
    assert skipset is not None, f"{name} is gone: cache_saving_skipsets no longer applies"
    # Importing the package with Keras made the cache; calling again changes nothing.
    assert hasattr(skipset, "cache_info"), f"{name} is not cached after the package's import"
    keras_internals.cache_saving_skipsets()
    assert saving_lib.get_attr_skipset is skipset
    # `dir` lists `__annotations__` once anything has read a class's annotations (a test
    # before this one did, on CI); Keras's walk passes over dunder names anyway.
    _ = keras.metrics.Metric.__annotations__

    def walked(names):
        return {n for n in names if not n.startswith("__")}

    for kind in ("Layer", "Functional", "Optimizer", "Metric"):
        assert walked(skipset(kind)) == walked(skipset.__wrapped__(kind)), (
            f"{name}({kind!r}) differs cached")

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 2)), np.zeros((4, 1)), verbose=0)
    model.save(tmp_path / "first.keras")  # meets the kinds no test asked for yet
    before = skipset.cache_info()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    after = skipset.cache_info()
    assert after.hits > before.hits, f"Keras's saving no longer asks {name}"
    assert after.misses == before.misses, f"{name} was asked for a kind twice"
    np.testing.assert_array_equal(loaded.predict(np.ones((1, 2)), verbose=0),
                                  model.predict(np.ones((1, 2)), verbose=0))
