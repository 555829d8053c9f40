"""GELU fused by XLA while training: same values and gradients as Keras's."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.layers import activations
from tests.layers.gradients import values_and_gradients


@pytest.mark.parametrize("name", ["gelu", "gelu_approximate"])
def test_fused_activation_equals_plain(name):
    rng = np.random.default_rng(0)
    x = tf.constant(3 * rng.normal(size=(2, 5, 16)), tf.float32)
    upstream = tf.constant(rng.normal(size=(2, 5, 16)), tf.float32)
    activations._fused_activation.cache_clear()
    trained = values_and_gradients(
        lambda x: activations.activate(name, x, training=True), [x], upstream)
    assert activations._fused_activation.cache_info().currsize == 1  # the XLA kernels ran
    plain = values_and_gradients(lambda x: activations.activate(name, x), [x], upstream)
    for a, b in zip(trained, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
