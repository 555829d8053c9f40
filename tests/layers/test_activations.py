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


def test_gelu_equals_keras_exact_gelu_and_its_gradient():
    rng = np.random.default_rng(1)
    x = tf.constant(4 * rng.normal(size=(3, 7)), tf.float32)
    upstream = tf.constant(rng.normal(size=(3, 7)), tf.float32)
    ours = values_and_gradients(activations.ACTIVATIONS["gelu"], [x], upstream)
    keras_gelu = values_and_gradients(lambda x: tf.nn.gelu(x, approximate=False), [x], upstream)
    for a, b in zip(ours, keras_gelu, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_feed_forward_gelu_follows_the_intermediate_bias_add():
    # The inference graph of a block: GELU reads the intermediate BiasAdd's output
    # directly, the pattern TensorFlow's remapper fuses into the matmul's kernel
    # (tests/export/test_embedder_exports.py checks the fusion in a served SavedModel).
    from keras_bert_core.layers import TransformerEncoderBlock, attention_bias

    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    block.build((None, None, 16))
    graph = tf.function(lambda x, mask: block(x, attention_bias(mask), training=False)
                        ).get_concrete_function(tf.TensorSpec([None, None, 16]),
                                                tf.TensorSpec([None, None], tf.int32)).graph
    erf = [op for op in graph.get_operations() if op.type == "Erf"]
    assert len(erf) == 1
    scaled = erf[0].inputs[0].op  # x / sqrt(2)
    assert scaled.type == "Mul" and scaled.inputs[0].op.type == "BiasAdd"
