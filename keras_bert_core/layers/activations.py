"""The activations of the layers, GELU's fused by XLA while training (see `fusion`)."""

import functools

import keras

from keras_bert_core.layers.fusion import fuses_elementwise, xla_fused


def gelu_exact(x):
    """BERT's GELU, `x / 2 * (1 + erf(x / sqrt(2)))`, written so that TensorFlow's remapper
    fuses it into the matmul and bias before it (`tf.nn.gelu`'s `erfc` form does not fuse
    there, and its `Erfc` kernel is slower than `Erf`'s).

    Example:
    >>> import numpy as np
    >>> x = np.array([-3.0, -0.5, 0.0, 1.0, 4.0], "float32")
    >>> expected = keras.activations.gelu(x, approximate=False)
    >>> bool(np.allclose(gelu_exact(x), expected, atol=1e-6))
    True
    """
    x = keras.ops.convert_to_tensor(x)
    return keras.ops.multiply(keras.ops.multiply(x, 0.5),
                              keras.ops.add(keras.ops.erf(keras.ops.multiply(x, 0.5**0.5)), 1.0))


ACTIVATIONS = {
    "gelu": gelu_exact,
    "gelu_approximate": lambda x: keras.activations.gelu(x, approximate=True),
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
}
# Chains of element-wise ops; relu and tanh are single kernels already.
_FUSED_ACTIVATIONS = ("gelu", "gelu_approximate")


@functools.cache
def _fused_activation(name):
    return xla_fused(ACTIVATIONS[name])


def activate(name, x, training=None):
    """Applies the activation `name` (a key of `ACTIVATIONS`), fused while training."""
    if name in _FUSED_ACTIVATIONS and fuses_elementwise(training):
        return _fused_activation(name)(x)
    return ACTIVATIONS[name](x)
