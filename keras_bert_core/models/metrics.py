"""Metrics of the task models."""

import keras
from keras import ops

# Label of tokens left out of token-level losses and metrics (word pieces after the first,
# special tokens, padding); the value Hugging Face and PyTorch use.
IGNORE_LABEL = -100


@keras.saving.register_keras_serializable(package="keras_bert_core")
class MaskedSparseCategoricalAccuracy(keras.metrics.SparseCategoricalAccuracy):
    """Sparse categorical accuracy that skips the labels equal to `ignore_class`.

    Args:
        ignore_class: the label of positions to leave out.
        name: metric name.
        dtype: metric dtype.

    Example:
    >>> import numpy as np
    >>> metric = MaskedSparseCategoricalAccuracy()
    >>> logits = np.array([[[2.0, 0.0], [2.0, 0.0], [0.0, 2.0]]], "float32")
    >>> metric.update_state(np.array([[0, -100, 0]]), logits)
    >>> float(metric.result())
    0.5
    """

    def __init__(self, ignore_class=IGNORE_LABEL, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_class = ignore_class

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        valid = ops.not_equal(y_true, ops.cast(self.ignore_class, y_true.dtype))
        weight = ops.cast(valid, self.dtype)
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, self.dtype)
            while len(sample_weight.shape) < len(weight.shape):  # per-example weights
                sample_weight = sample_weight[..., None]
            weight = weight * sample_weight
        super().update_state(ops.where(valid, y_true, 0), y_pred, weight)

    def get_config(self):
        return {**super().get_config(), "ignore_class": self.ignore_class}
