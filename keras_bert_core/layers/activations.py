"""The activations of the layers, GELU's fused by XLA while training (see `fusion`)."""

import functools

import keras

from keras_bert_core.layers.fusion import fuses_elementwise, xla_fused

ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
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
