"""`FlatDense`: Keras's Dense layer, its matmul and bias fused into one kernel."""

import keras

from keras_bert_core.layers.fusion import fuses_dense


@keras.saving.register_keras_serializable(package="keras_bert_core")
class FlatDense(keras.layers.Dense):
    """`keras.layers.Dense` that runs its matmul and bias on `[rows, width]`.

    On TensorFlow, Keras multiplies a `[batch, seq, width]` input through `tensordot`, whose
    reshapes and transposes keep grappler from fusing the matmul with the bias add that
    follows. Flattened, both run as one `_FusedMatMul` kernel (the gain: `keras_dense` in
    bench/ablations.py; `fusion(dense=False)` turns it off), with a GELU that follows on
    the flat rows too. While training, the kernel's gradient is taken as a batch matmul
    (see `_matmul_bias`). Same weights, arguments and results as `keras.layers.Dense`.

    Example:
    >>> import numpy as np
    >>> dense = FlatDense(3)
    >>> tuple(dense(np.ones((2, 5, 4), "float32")).shape)
    (2, 5, 3)
    """

    def call(self, inputs, training=None):
        if not fuses_dense():
            return super().call(inputs)
        if len(inputs.shape) == 2:
            return self._call_rows(inputs, training)
        shape = keras.ops.shape(inputs)
        flat = self._call_rows(keras.ops.reshape(inputs, (-1, shape[-1])), training)
        return keras.ops.reshape(flat, (*shape[:-1], self.units))

    def _call_rows(self, rows, training=None):
        if self.bias is None or keras.backend.backend() != "tensorflow":
            return super().call(rows)
        import tensorflow as tf

        # BiasAdd, not Dense's AddV2: grappler fuses an activation after it (GELU) into the
        # same kernel only behind a BiasAdd.
        if training is True:
            x = _matmul_bias(rows, keras.ops.cast(self.kernel, rows.dtype),
                             keras.ops.cast(self.bias, rows.dtype))
        else:
            x = keras.ops.matmul(rows, self.kernel)
            x = tf.nn.bias_add(x, keras.ops.cast(self.bias, x.dtype))
        return x if self.activation is None else self.activation(x)


def _matmul_bias(rows, kernel, bias):
    """`rows @ kernel + bias`, its kernel gradient `rows^T @ upstream` as a batch matmul with
    the rows adjoint: TensorFlow's own gradient, a `MatMul` with `transpose_a`, runs slower
    on CPU for a kernel wider in than out (the feed-forward's output; bench/RESULTS.md,
    issue 32's weight-gradient figures). Same values; the matmul and bias still fuse."""
    import tensorflow as tf

    @tf.custom_gradient
    def matmul_bias(rows, kernel, bias):
        def gradient(upstream):
            return (tf.matmul(upstream, kernel, transpose_b=True),
                    tf.raw_ops.BatchMatMulV2(x=rows, y=upstream, adj_x=True),
                    tf.raw_ops.BiasAddGrad(out_backprop=upstream))

        return tf.nn.bias_add(tf.matmul(rows, kernel), bias), gradient

    return matmul_bias(rows, kernel, bias)
