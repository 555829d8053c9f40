"""FlatDense: same values and gradients as keras.layers.Dense."""

import keras
import numpy as np
import pytest
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


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_flat_dense_training_gradients_equal_keras_dense(dtype):
    # While training, the kernel's gradient is a batch matmul with the rows adjoint (a
    # custom gradient): the values and every gradient stay Keras Dense's.
    rng = np.random.default_rng(5)
    policy = "mixed_float16" if dtype == "float16" else "float32"
    flat, plain = FlatDense(6, dtype=policy), keras.layers.Dense(6, dtype=policy)
    for layer in (flat, plain):
        layer.build((None, 8))
    plain.set_weights([rng.normal(size=(8, 6)), rng.normal(size=6)])
    flat.set_weights(plain.get_weights())
    x = tf.constant(rng.normal(size=(2, 5, 8)), dtype)
    upstream = tf.constant(rng.normal(size=(2, 5, 6)), dtype)

    def run(layer):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
        return [y, *tape.gradient(y, [x, *layer.trainable_variables], upstream)]

    atol = 1e-5 if dtype == "float32" else 2e-2  # float16 sums over 10 rows of size ~3
    for a, b in zip(run(flat), run(plain), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a, "float32"), np.asarray(b, "float32"),
                                   rtol=1e-3, atol=atol)
    graph = tf.function(lambda x: tf.gradients(flat(x, training=True), x)).get_concrete_function(
        tf.TensorSpec([None, None, 8], dtype)).graph
    assert "BatchMatMulV2" in {op.type for op in graph.get_operations()}
