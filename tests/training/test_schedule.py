"""`WarmupLinearDecay`: the curve, its edge cases, its config."""

import re

import keras
import numpy as np
import pytest

from keras_bert_core.training import WarmupLinearDecay


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
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        WarmupLinearDecay(**kwargs)
