"""Layers whose training ops fuse: GELU and LayerNorm as one XLA kernel per direction, and
Dense layers whose matmul and bias run as one kernel.

Without XLA, TensorFlow runs GELU and LayerNorm as chains of element-wise kernels (the tanh
GELU is 7 forward and about 12 backward), each a pass over `[batch * seq, width]` values
(bench/ablations.py's `unfused` variant shows their share of a training step). While training,
each becomes one XLA kernel forward and one backward that recomputes the forward inside
itself instead of keeping its intermediates (the matmuls around them stay TensorFlow's).
Inference, export and other backends run the plain ops, so SavedModels and TFLite files hold
no XLA-only functions. Results equal the plain ops' to float rounding. `fusion` turns either
kind off, to measure what it gains (bench/ablations.py) or to check it changes no result.
"""

import contextlib
import functools

import keras

ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
    "gelu_approximate": lambda x: keras.activations.gelu(x, approximate=True),
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
}
# Chains of element-wise ops; relu and tanh are single kernels already.
_FUSED_ACTIVATIONS = ("gelu", "gelu_approximate")


# The fusions that layers use when called (or traced): all, except while `fusion` says not.
_ENABLED = {"elementwise": True, "dense": True}


@contextlib.contextmanager
def fusion(elementwise=True, dense=True):
    """Switches this module's fusions for the layers called, or traced, while it is held.

    A traced step keeps the ops it was traced with, so hold it while a model's step is
    traced (its first `fit`, `train_on_batch` or `tf.function` call). Results are the same
    either way, to float rounding; only the ops that compute them differ.

    Args:
        elementwise: GELU and `LayerNorm` as one XLA kernel each way while training; `False`
            leaves them TensorFlow's chains of element-wise ops.
        dense: `FlatDense` flattens the leading axes so that its matmul and bias fuse; `False`
            runs `keras.layers.Dense.call` on the input as it is.

    Example:
    >>> import numpy as np
    >>> x = np.array([[-1.0, 0.5, 2.0]], "float32")
    >>> with fusion(elementwise=False):
    ...     plain = activate("gelu", x, training=True)
    >>> np.allclose(plain, activate("gelu", x, training=True), atol=1e-6)
    True
    """
    previous = dict(_ENABLED)
    _ENABLED.update(elementwise=elementwise, dense=dense)
    try:
        yield
    finally:
        _ENABLED.update(previous)


def _fuses(training):
    return (training is True and _ENABLED["elementwise"]
            and keras.backend.backend() == "tensorflow")


def xla_fused(fn):
    """`fn` (tensors in, one tensor out) as one XLA kernel forward and one backward.

    The backward kernel recomputes `fn` and differentiates it, so nothing but the inputs is
    kept between the passes. TensorFlow backend only.

    Example:
    >>> import tensorflow as tf
    >>> square = xla_fused(lambda x: x * x)
    >>> x = tf.constant([1.0, 3.0])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = square(x)
    >>> y.numpy().tolist(), tape.gradient(y, x).numpy().tolist()
    ([1.0, 9.0], [2.0, 6.0])
    """
    import tensorflow as tf

    forward = tf.function(fn, jit_compile=True, autograph=False)

    @tf.function(jit_compile=True, autograph=False)
    def backward(upstream, *args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            outputs = fn(*args)
        return tape.gradient(outputs, args, output_gradients=upstream)

    @tf.custom_gradient
    def fused(*args):
        return forward(*args), lambda upstream: backward(upstream, *args)

    return fused


@functools.cache
def _fused_activation(name):
    return xla_fused(ACTIVATIONS[name])


def activate(name, x, training=None):
    """Applies the activation `name` (a key of `ACTIVATIONS`), fused while training."""
    if name in _FUSED_ACTIVATIONS and _fuses(training):
        return _fused_activation(name)(x)
    return ACTIVATIONS[name](x)


@functools.cache
def _fused_layer_norm(epsilon):
    import tensorflow as tf

    def normalize(x, gamma, beta):
        # keras.ops.layer_normalization's arithmetic.
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        scale = tf.math.rsqrt(variance + epsilon) * gamma
        return x * scale + (beta - mean * scale)

    return xla_fused(normalize)


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
        if not (self._fusable and _fuses(training)):
            return super().call(inputs)
        # As keras.ops.layer_normalization: at least float32.
        dtype = keras.backend.result_type(inputs.dtype, "float32")
        outputs = _fused_layer_norm(self.epsilon)(
            *(keras.ops.cast(t, dtype) for t in (inputs, self.gamma, self.beta)))
        return keras.ops.cast(outputs, self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class FlatDense(keras.layers.Dense):
    """`keras.layers.Dense` that runs its matmul and bias on `[rows, width]`.

    On TensorFlow, Keras multiplies a `[batch, seq, width]` input through `tensordot`, whose
    reshapes and transposes keep grappler from fusing the matmul with the bias add that
    follows. Flattened, both run as one `_FusedMatMul` kernel (the gain: `keras_dense` in
    bench/ablations.py; `fusion(dense=False)` turns it off). Same weights, arguments and
    results as `keras.layers.Dense`.

    Example:
    >>> import numpy as np
    >>> dense = FlatDense(3)
    >>> tuple(dense(np.ones((2, 5, 4), "float32")).shape)
    (2, 5, 3)
    """

    def call(self, inputs, training=None):
        if len(inputs.shape) == 2 or not _ENABLED["dense"]:
            return super().call(inputs)
        shape = keras.ops.shape(inputs)
        flat = super().call(keras.ops.reshape(inputs, (-1, shape[-1])))
        return keras.ops.reshape(flat, (*shape[:-1], self.units))
