"""`Dropout`: Keras's dropout, one XLA kernel each way while training, its mask from a hash."""

import functools

import keras

from keras_bert_core.layers.fusion import fuses_elementwise

# A counter hash (two rounds of Chris Wellons' `lowbias32`, a 32-bit integer mixer) of each
# value's position and the call's seed decides whether the value is kept. TensorFlow's
# stateless dropout draws a Philox float per value in a kernel of its own, then compares,
# scales and selects in three more passes, and keeps the mask for the backward pass: a
# large share of a BERT training step on CPU (bench/embedder_step.py's `no_dropout` and
# `keras_dropout` variants, figures in bench/RESULTS.md). The hash is a few integer ops per
# value that XLA runs inside one vectorized kernel with the scaling, and the backward
# kernel recomputes the same mask from the seed, so no mask is kept.
_MIX_1, _MIX_2 = 0x7FEB352D, 0x846CA68B
_GOLDEN, _OFFSET = 0x9E3779B9, 0x85EBCA6B


def _lowbias32(h):
    import tensorflow as tf

    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))
    h = h * tf.constant(_MIX_1, tf.uint32)
    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 15))
    h = h * tf.constant(_MIX_2, tf.uint32)
    return tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))


def keep_mask(shape, seed, rate):
    """Bool `shape`: which values dropout keeps, each with probability `1 - rate` (to 2**-32),
    a function of `seed` (2 integers) and the value's position alone.

    Example:
    >>> import tensorflow as tf
    >>> mask = keep_mask([1000, 100], tf.constant([3, 7]), rate=0.25)
    >>> round(float(tf.reduce_mean(tf.cast(mask, "float32"))), 2)
    0.75
    >>> bool(tf.reduce_all(mask == keep_mask([1000, 100], tf.constant([3, 7]), rate=0.25)))
    True
    """
    import tensorflow as tf

    seed = tf.cast(seed, tf.uint32)
    key = _lowbias32(seed[0] * tf.constant(_GOLDEN, tf.uint32)
                     + _lowbias32(seed[1] + tf.constant(_OFFSET, tf.uint32)))
    positions = tf.cast(tf.reshape(tf.range(tf.reduce_prod(shape)), shape), tf.uint32)
    bits = _lowbias32(_lowbias32(tf.bitwise.bitwise_xor(positions, key)) + key)
    return bits >= tf.constant(min(round(rate * 2**32), 2**32 - 1), tf.uint32)


@functools.cache
def _fused_dropout(rate):
    """`(x, seed) -> dropped x` as one XLA kernel, its gradient the same kernel on the
    upstream gradient (dropout is linear in `x`)."""
    import tensorflow as tf

    @tf.function(jit_compile=True, autograph=False)
    def drop(x, seed):
        kept = x * tf.cast(1.0 / (1.0 - rate), x.dtype)
        return tf.where(keep_mask(tf.shape(x), seed, rate), kept, tf.zeros_like(x))

    @tf.custom_gradient
    def fused(x, seed):
        return drop(x, seed), lambda upstream: (drop(upstream, seed), None)

    return fused


@keras.saving.register_keras_serializable(package="keras_bert_core")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose training pass is one XLA kernel each way.

    Same arguments, rate, scaling (`1 / (1 - rate)` on the values kept) and inference pass
    as Keras's layer. While training on TensorFlow without `noise_shape`, which values are
    dropped is decided by `keep_mask` (a hash of each value's position and a seed the layer's
    seed generator draws per call) instead of Philox random numbers: another random mask,
    as likely to keep each value, drawn in one kernel that also scales, and redrawn from the
    seed in the backward kernel instead of kept. `fusion(elementwise=False)` gives Keras's
    dropout.

    Example:
    >>> import numpy as np
    >>> layer = Dropout(0.5, seed=1)
    >>> x = np.ones((4, 1000), "float32")
    >>> y = np.asarray(layer(x, training=True))
    >>> sorted(set(y.ravel().tolist())), round(float((y == 0).mean()), 1)
    ([0.0, 2.0], 0.5)
    >>> bool((np.asarray(layer(x, training=False)) == x).all())
    True
    """

    def call(self, inputs, training=False):
        if (0 < self.rate < 1 and self.noise_shape is None and training is True
                and fuses_elementwise(training)):
            return _fused_dropout(float(self.rate))(keras.ops.convert_to_tensor(inputs),
                                                    self.seed_generator.next())
        return super().call(inputs, training=training)
