"""FlatDense: same values and gradients as keras.layers.Dense."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_core.layers.flat_dense import FlatDense
from tests.layers.gradients import values_and_gradients


def test_flat_dense_equals_keras_dense_on_any_rank():
    rng = np.random.default_rng(3)
    flat, plain = FlatDense(6, activation="tanh"), keras.layers.Dense(6, activation="tanh")
    for layer in (flat, plain):
        layer.build((None, 8))
    plain.set_weights([rng.normal(size=(8, 6)), rng.normal(size=6)])
    flat.set_weights(plain.get_weights())
    for shape in [(2, 5, 8), (3, 8)]:
        x = tf.constant(rng.normal(size=shape), tf.float32)
        upstream = tf.constant(rng.normal(size=(*shape[:-1], 6)), tf.float32)
        results = [values_and_gradients(layer, [x], upstream) for layer in (flat, plain)]
        for a, b in zip(*results, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # Unknown batch and sequence lengths, as in a traced training step.
    traced = tf.function(flat, input_signature=[tf.TensorSpec([None, None, 8], tf.float32)])
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    np.testing.assert_allclose(traced(x), plain(x), rtol=1e-5, atol=1e-5)
