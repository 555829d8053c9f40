"""Training ops that fuse, and the switch that turns the fusions off.

Without XLA, TensorFlow runs GELU and LayerNorm as chains of element-wise kernels (the tanh
GELU is 7 forward and about 12 backward), each a pass over `[batch * seq, width]` values
(bench/ablations.py's `unfused` variant shows their share of a training step). While training,
each becomes one XLA kernel forward and one backward that recomputes the forward inside
itself instead of keeping its intermediates (the matmuls around them stay TensorFlow's).
Inference, export and other backends run the plain ops, so SavedModels and TFLite files hold
no XLA-only functions. Results equal the plain ops' to float rounding. While training (and at
inference for models that read no padding output, `real_tokens_only`), the feed-forward half
of each block also runs on the real tokens' rows alone, not the padding's (`unpadded_rows`).
`fusion` turns each kind off, to measure what it gains (bench/ablations.py,
bench/embedder_step.py) or to check it changes no result.
"""

import contextlib

import keras

# The fusions that layers use when called (or traced): all, except while `fusion` says not.
_ENABLED = {"elementwise": True, "dense": True, "unpadded": True}


@contextlib.contextmanager
def fusion(elementwise=True, dense=True, unpadded=True):
    """Switches the layers' fusions for the layers called, or traced, while it is held.

    A traced step keeps the ops it was traced with, so hold it while a model's step is
    traced (its first `fit`, `train_on_batch` or `tf.function` call). Results are the same
    either way, to float rounding; only the ops that compute them differ.

    Args:
        elementwise: GELU, `LayerNorm` and `Dropout` as one XLA kernel each way while
            training; `False` leaves them TensorFlow's chains of element-wise ops (and
            dropout Keras's random masks).
        dense: `FlatDense` flattens the leading axes so that its matmul and bias fuse; `False`
            runs `keras.layers.Dense.call` on the input as it is.
        unpadded: while training, each block's feed-forward half (and its norm) runs on the
            real tokens' rows (`unpadded_rows`); `False` runs it on every position.

    Example:
    >>> import numpy as np
    >>> from keras_bert_core.layers.activations import activate
    >>> x = np.array([[-1.0, 0.5, 2.0]], "float32")
    >>> with fusion(elementwise=False):
    ...     plain = activate("gelu", x, training=True)
    >>> np.allclose(plain, activate("gelu", x, training=True), atol=1e-6)
    True
    """
    previous = dict(_ENABLED)
    _ENABLED.update(elementwise=elementwise, dense=dense, unpadded=unpadded)
    try:
        yield
    finally:
        _ENABLED.update(previous)


def fuses_elementwise(training):
    """Whether a call with this `training` runs its element-wise chains as XLA kernels."""
    return (training is True and _ENABLED["elementwise"]
            and keras.backend.backend() == "tensorflow")


def fuses_dense():
    """Whether `FlatDense` flattens its input so that matmul and bias fuse."""
    return _ENABLED["dense"]


def unpads(training):
    """Whether a call runs its feed-forward on the real tokens' rows alone: while training,
    or at inference inside `real_tokens_only`; not where XLA compiles the whole step (their
    number is not static)."""
    if not ((training is True or _REAL_TOKENS_ONLY["held"]) and _ENABLED["unpadded"]
            and keras.backend.backend() == "tensorflow"):
        return False
    from keras_bert_core.tensorflow_internals import traced_into_xla

    return not traced_into_xla()


# Whether the model being called or traced reads no padding position's output.
_REAL_TOKENS_ONLY = {"held": False}


@contextlib.contextmanager
def real_tokens_only():
    """Held while a model that reads the real tokens' outputs alone is called or traced
    (`BertEmbedder` pools them): at inference too, each block's feed-forward half then runs
    on the real tokens' rows (`unpadded_rows`), as it does while training. The padding
    positions' sequence outputs become zeros, which such a model never reads.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> mask = np.array([[1, 1, 1, 0]], "int32")
    >>> inputs = {"token_ids": np.array([[2, 7, 3, 0]], "int32"), "padding_mask": mask,
    ...           "segment_ids": np.zeros((1, 4), "int32")}
    >>> with real_tokens_only():
    ...     unpadded = encoder(inputs)["sequence_output"]
    >>> padded = encoder(inputs)["sequence_output"]
    >>> bool(np.allclose(unpadded[:, :3], padded[:, :3], atol=1e-5))
    True
    >>> bool((np.asarray(unpadded[:, 3]) == 0).all())
    True
    """
    previous = _REAL_TOKENS_ONLY["held"]
    _REAL_TOKENS_ONLY["held"] = True
    try:
        yield
    finally:
        _REAL_TOKENS_ONLY["held"] = previous


# While training, the unpadded rows are counted up to a multiple of this: the XLA kernels
# (and oneDNN's matmul primitives) are compiled once per shape, and the number of real
# tokens changes with every batch.
ROW_MULTIPLE = 256
# At inference nothing in the feed-forward is an XLA kernel, and oneDNN caches a primitive
# per shape: a small multiple leaves out nearly all the padding of a serving batch.
INFERENCE_ROW_MULTIPLE = 16


def unpadded_rows(token_mask, training=True):
    """`(rows, count)`: int32 indices of the real tokens (`token_mask > 0`) among the
    `[batch * seq]` flattened positions, first the `count` real ones, then index 0 again up
    to a multiple of `ROW_MULTIPLE` while training, of `INFERENCE_ROW_MULTIPLE` otherwise
    (or to `batch * seq`). TensorFlow backend only.

    Example:
    >>> import numpy as np
    >>> rows, count = unpadded_rows(np.array([[1, 1, 0], [1, 0, 0]]))
    >>> rows.numpy().tolist(), int(count)
    ([0, 1, 3, 0, 0, 0], 3)
    """
    import tensorflow as tf

    flat = tf.reshape(tf.convert_to_tensor(token_mask), [-1])
    real = tf.cast(tf.where(flat > 0)[:, 0], tf.int32)
    count = tf.shape(real)[0]
    multiple = ROW_MULTIPLE if training is True else INFERENCE_ROW_MULTIPLE
    padded = tf.minimum((count + multiple - 1) // multiple * multiple, tf.shape(flat)[0])
    return tf.pad(real, [[0, padded - count]]), count


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
