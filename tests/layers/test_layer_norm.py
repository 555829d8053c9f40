"""LayerNorm fused by XLA while training: same values and gradients as Keras's."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_core.layers import LayerNorm, layer_norm
from tests.layers.gradients import values_and_gradients


def test_fused_layer_norm_equals_keras_layer_norm():
    rng = np.random.default_rng(1)
    norm = LayerNorm(epsilon=1e-12)
    x = tf.constant(rng.normal(loc=2.0, size=(3, 7, 32)), tf.float32)
    norm.build(x.shape)
    norm.gamma.assign(rng.normal(size=32))
    norm.beta.assign(rng.normal(size=32))
    upstream = tf.constant(rng.normal(size=(3, 7, 32)), tf.float32)
    layer_norm._fused_layer_norm.cache_clear()

    def run(training):
        return lambda x, gamma, beta: norm(x, training=training)

    inputs = [x, norm.gamma.value, norm.beta.value]
    trained = values_and_gradients(run(True), inputs, upstream)
    assert layer_norm._fused_layer_norm.cache_info().currsize == 1
    plain = values_and_gradients(run(False), inputs, upstream)
    for a, b in zip(trained, plain, strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)


def test_layer_norm_keeps_mixed_precision_dtypes():
    norm = LayerNorm(dtype=keras.DTypePolicy("mixed_float16"))
    x = np.random.default_rng(2).normal(size=(2, 4, 8)).astype("float16")
    trained, plain = norm(x, training=True), norm(x, training=False)
    assert trained.dtype == plain.dtype == "float16"
    np.testing.assert_allclose(np.asarray(trained), np.asarray(plain), atol=2e-3)
