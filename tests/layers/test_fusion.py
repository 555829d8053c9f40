"""The fusion switch: it changes the ops of a traced step, not its results."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.layers import LayerNorm
from keras_bert_core.layers.activations import activate
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.fusion import fusion


@pytest.mark.parametrize("switch, plain_op", [("elementwise", "Erf"), ("dense", "Transpose")])
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
            y = norm(activate("gelu", dense(x), training=True), training=True)
        return [y, *tape.gradient(y, [x, *variables], upstream)]

    traced = {}
    for enabled in (True, False):
        with fusion(**{switch: enabled}):
            traced[enabled] = tf.function(step, input_signature=[
                tf.TensorSpec([None, None, 4], tf.float32)]).get_concrete_function()
    ops = {enabled: {op.type for op in f.graph.get_operations()} for enabled, f in traced.items()}
    assert plain_op in ops[False] and plain_op not in ops[True]
    for a, b in zip(traced[True](x), traced[False](x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5)
