"""A long text's windows: their rows flattened for the encoder, and their logits joined into
the text's (mean, max, or attention-weighted)."""

import keras
from keras import ops

AGGREGATIONS = ("mean", "max", "attention")
# Added to the scores of missing windows, so that softmax gives them nothing.
_MISSING = -1e9


@keras.saving.register_keras_serializable(package="keras_bert_core")
class WindowRows(keras.layers.Layer):
    """`[batch, windows, width]` inputs as `[batch * windows, width]` rows, text-major.

    Example:
    >>> import numpy as np
    >>> WindowRows()(np.zeros((2, 3, 8), "int32")).shape
    TensorShape([6, 8])
    """

    def call(self, inputs):
        return ops.reshape(inputs, (-1, ops.shape(inputs)[-1]))

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((None, inputs.shape[-1]), dtype=inputs.dtype)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class WindowAggregation(keras.layers.Layer):
    """Joins the logits of each text's windows into the text's logits.

    - `"mean"`: their mean;
    - `"max"`: each class's largest logit over the windows;
    - `"attention"`: a mean weighted by a softmax over the windows of a learned score of
      each window's features (a dense layer to one score), so that the windows that
      decide the label weigh most.

    A text's missing windows (`padding_mask` all 0, see `text.windows.pack_windows`) take
    no part.

    Args:
        mode: one of `AGGREGATIONS`.
        initializer_range: stddev of the attention scorer's truncated-normal initializer.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        logits: `[batch * windows, classes]`, text-major (`WindowRows`' order).
        features: `[batch * windows, hidden]`, what the head read (for `"attention"`).
        padding_mask: the windows' int32 `[batch, windows, width]`.

    Returns float32 logits `[batch, classes]`.

    Example:
    >>> import numpy as np
    >>> mask = np.array([[[1, 1], [1, 1]], [[1, 1], [0, 0]]], "int32")
    >>> logits = np.array([[1.0, 0.0], [3.0, 4.0], [2.0, 2.0], [9.0, 9.0]], "float32")
    >>> WindowAggregation("mean")(logits, np.zeros((4, 3), "float32"), mask).numpy().tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    >>> WindowAggregation("max")(logits, np.zeros((4, 3), "float32"), mask).numpy().tolist()
    [[3.0, 4.0], [2.0, 2.0]]
    """

    def __init__(self, mode="mean", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if mode not in AGGREGATIONS:
            raise ValueError(f"window aggregation must be one of {AGGREGATIONS}, got {mode!r}")
        self.mode = mode
        self.initializer_range = initializer_range
        self.scorer = None
        if mode == "attention":
            self.scorer = keras.layers.Dense(
                1, kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range), dtype=self.dtype_policy, name="window_scorer")

    def build(self, logits_shape, features_shape=None, padding_mask_shape=None):
        if self.scorer is not None:
            self.scorer.build(features_shape)

    def call(self, logits, features, padding_mask):
        shape = ops.shape(padding_mask)
        logits = ops.reshape(ops.cast(logits, "float32"), (shape[0], shape[1], -1))
        exists = ops.cast(padding_mask[:, :, 0] > 0, "float32")  # [batch, windows]
        if self.mode == "max":
            missing = ops.expand_dims((1.0 - exists) * _MISSING, -1)
            return ops.max(logits + missing, axis=1)
        if self.mode == "mean":
            weights = exists / ops.maximum(ops.sum(exists, axis=1, keepdims=True), 1.0)
        else:
            scores = ops.reshape(ops.cast(self.scorer(features), "float32"),
                                 (shape[0], shape[1]))
            weights = ops.softmax(scores + (1.0 - exists) * _MISSING, axis=1) * exists
        return ops.sum(ops.expand_dims(weights, -1) * logits, axis=1)

    def compute_output_spec(self, logits, features, padding_mask):
        return keras.KerasTensor((padding_mask.shape[0], logits.shape[-1]), dtype="float32")

    def get_config(self):
        return {**super().get_config(), "mode": self.mode,
                "initializer_range": self.initializer_range}
