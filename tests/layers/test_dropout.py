"""The package's dropout: Keras's layer, its training mask from a hash in one XLA kernel."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.layers.dropout import Dropout, keep_mask
from keras_bert_core.layers.fusion import fusion


def _dropped_and_gradient(layer, x, upstream):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
    return y.numpy(), tape.gradient(y, x, upstream).numpy()


@pytest.mark.parametrize("fused", [True, False])
def test_dropout_keeps_each_value_with_its_probability_and_scales_it(fused):
    # Fused (the hash) and Keras's (Philox) draw other masks from the same distribution:
    # the same share kept, the same scale, the gradient through the forward pass's mask.
    rate = 0.1
    x = tf.constant(np.random.default_rng(0).uniform(1, 2, size=(64, 12, 32, 32)), tf.float32)
    upstream = tf.ones_like(x) * 3.0
    with fusion(elementwise=fused):
        layer = Dropout(rate, seed=5)
        y, gradient = _dropped_and_gradient(layer, x, upstream)
        again, _ = _dropped_and_gradient(layer, x, upstream)
    kept = y != 0
    assert abs(kept.mean() - (1 - rate)) < 3e-3  # 786,432 draws: 0.3% is ~9 sigma
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / (1 - rate), rtol=1e-6)
    np.testing.assert_allclose(gradient, np.where(kept, 3.0 / (1 - rate), 0.0), rtol=1e-6)
    # A new mask every call, unrelated to the last: agreement is (1-r)^2 + r^2.
    assert abs(((again != 0) == kept).mean() - ((1 - rate) ** 2 + rate**2)) < 3e-3
    assert np.array_equal(layer(x, training=False), x)


def test_keep_mask_is_a_function_of_seed_and_position_without_pattern():
    mask = keep_mask([256, 1024], tf.constant([1, 2]), rate=0.5).numpy()
    assert np.array_equal(mask, keep_mask([256, 1024], tf.constant([1, 2]), rate=0.5))
    other = keep_mask([256, 1024], tf.constant([1, 3]), rate=0.5).numpy()
    assert abs((mask == other).mean() - 0.5) < 5e-3
    # Neighbours (along and across rows) are uncorrelated.
    values = mask.astype("float32")
    for a, b in ((values[:, 1:], values[:, :-1]), (values[1:], values[:-1])):
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.01
    assert keep_mask([4], tf.constant([0, 0]), rate=0.0).numpy().all()


def test_dropout_runs_in_half_precision_and_traces_with_dynamic_shapes():
    layer = Dropout(0.5, seed=3, dtype="mixed_float16")

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float16)])
    def drop(x):
        return layer(x, training=True)

    y = drop(tf.ones([8, 100], tf.float16)).numpy()
    assert y.dtype == np.float16 and set(np.unique(y)) == {0.0, 2.0}
