"""Layers whose training ops fuse: same values and gradients as the plain Keras ones."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.layers import LayerNorm, fused
from keras_bert_core.layers.fused import FlatDense


def values_and_gradients(fn, inputs, upstream):
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = fn(*inputs)
    return [outputs.numpy()] + [g.numpy() for g in tape.gradient(outputs, inputs, upstream)]


@pytest.mark.parametrize("name", ["gelu", "gelu_approximate"])
def test_fused_activation_equals_plain(name):
    rng = np.random.default_rng(0)
    x = tf.constant(3 * rng.normal(size=(2, 5, 16)), tf.float32)
    upstream = tf.constant(rng.normal(size=(2, 5, 16)), tf.float32)
    fused._fused_activation.cache_clear()
    trained = values_and_gradients(lambda x: fused.activate(name, x, training=True), [x], upstream)
    assert fused._fused_activation.cache_info().currsize == 1  # the XLA kernels ran
    plain = values_and_gradients(lambda x: fused.activate(name, x), [x], upstream)
    for a, b in zip(trained, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_fused_layer_norm_equals_keras_layer_norm():
    rng = np.random.default_rng(1)
    norm = LayerNorm(epsilon=1e-12)
    x = tf.constant(rng.normal(loc=2.0, size=(3, 7, 32)), tf.float32)
    norm.build(x.shape)
    norm.gamma.assign(rng.normal(size=32))
    norm.beta.assign(rng.normal(size=32))
    upstream = tf.constant(rng.normal(size=(3, 7, 32)), tf.float32)
    fused._fused_layer_norm.cache_clear()

    def run(training):
        return lambda x, gamma, beta: norm(x, training=training)

    inputs = [x, norm.gamma.value, norm.beta.value]
    trained = values_and_gradients(run(True), inputs, upstream)
    assert fused._fused_layer_norm.cache_info().currsize == 1
    plain = values_and_gradients(run(False), inputs, upstream)
    for a, b in zip(trained, plain, strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)


def test_layer_norm_keeps_mixed_precision_dtypes():
    norm = LayerNorm(dtype=keras.DTypePolicy("mixed_float16"))
    x = np.random.default_rng(2).normal(size=(2, 4, 8)).astype("float16")
    trained, plain = norm(x, training=True), norm(x, training=False)
    assert trained.dtype == plain.dtype == "float16"
    np.testing.assert_allclose(np.asarray(trained), np.asarray(plain), atol=2e-3)


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


@pytest.mark.parametrize("switch, plain_op", [("elementwise", "Erfc"), ("dense", "Transpose")])
def test_fusion_switch_changes_the_ops_not_the_results(switch, plain_op):
    # Off, GELU's erf runs as a TensorFlow op of the step (on: inside the XLA kernel), and
    # Dense goes through tensordot's transposes (on: FlatDense's reshapes).
    rng = np.random.default_rng(4)
    dense, norm = FlatDense(8), LayerNorm(epsilon=1e-12)
    dense.build((None, 4))
    norm.build((None, 8))
    x = tf.constant(rng.normal(size=(2, 5, 4)), tf.float32)
    upstream = tf.constant(rng.normal(size=(2, 5, 8)), tf.float32)
    variables = [*dense.trainable_variables, *norm.trainable_variables]

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = norm(fused.activate("gelu", dense(x), training=True), training=True)
        return [y, *tape.gradient(y, [x, *variables], upstream)]

    traced = {}
    for enabled in (True, False):
        with fused.fusion(**{switch: enabled}):
            traced[enabled] = tf.function(step, input_signature=[
                tf.TensorSpec([None, None, 4], tf.float32)]).get_concrete_function()
    ops = {enabled: {op.type for op in f.graph.get_operations()} for enabled, f in traced.items()}
    assert plain_op in ops[False] and plain_op not in ops[True]
    for a, b in zip(traced[True](x), traced[False](x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5)
