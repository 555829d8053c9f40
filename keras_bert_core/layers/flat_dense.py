"""`FlatDense`: Keras's Dense layer, its matmul and bias fused into one kernel."""

import keras

from keras_bert_core.layers.fusion import fuses_dense


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
        if len(inputs.shape) == 2 or not fuses_dense():
            return super().call(inputs)
        shape = keras.ops.shape(inputs)
        flat = super().call(keras.ops.reshape(inputs, (-1, shape[-1])))
        return keras.ops.reshape(flat, (*shape[:-1], self.units))
