"""`LayerNorm`: Keras's layer normalization, one XLA kernel each way while training."""

import functools

import keras

from keras_bert_core.layers.fusion import fuses_elementwise, xla_fused


@functools.cache
def _fused_layer_norm(epsilon):
    import tensorflow as tf

    def normalize(x, gamma, beta):
        # keras.ops.layer_normalization's arithmetic.
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        scale = tf.math.rsqrt(variance + epsilon) * gamma
        return x * scale + (beta - mean * scale)

    return xla_fused(normalize)


def _rows(x):
    # The fused kernels run on [rows, width]: XLA's CPU kernels reduce over the last axis of
    # a matrix (and the gamma and beta gradients over its rows) much faster than over a
    # [batch, seq, width] input's (bench/embedder_step.py's `layer_norm_3d` variant).
    return keras.ops.reshape(x, (-1, keras.ops.shape(x)[-1]))


@keras.saving.register_keras_serializable(package="keras_bert_core")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` whose training pass over the last axis is fused.

    Same weights, arguments and results; while training on TensorFlow, a normalization over
    the last axis with both `gamma` and `beta` runs as one XLA kernel each way.

    Example:
    >>> import numpy as np
    >>> norm = LayerNorm(epsilon=1e-12)
    >>> x = np.array([[1.0, 2.0, 3.0, 4.0]], "float32")
    >>> np.allclose(norm(x, training=True), norm(x, training=False), atol=1e-6)
    True
    """

    def build(self, input_shape):
        super().build(input_shape)  # makes `axis` a sorted list
        self._fusable = (self.axis in ([-1], [len(input_shape) - 1]) and self.center
                         and self.scale and not self.rms_scaling)

    def call(self, inputs, training=None):
        if not (self._fusable and fuses_elementwise(training)):
            return super().call(inputs)
        # As keras.ops.layer_normalization: at least float32.
        dtype = keras.backend.result_type(inputs.dtype, "float32")
        outputs = _fused_layer_norm(self.epsilon)(
            *(keras.ops.cast(t, dtype) for t in (_rows(inputs), self.gamma, self.beta)))
        return keras.ops.cast(keras.ops.reshape(outputs, keras.ops.shape(inputs)),
                              self.compute_dtype)
