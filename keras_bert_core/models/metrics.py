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


def _target_is_top(y_true, y_pred):
    target = ops.take_along_axis(y_pred, ops.cast(y_true, "int32")[..., None], axis=-1)[..., 0]
    return ops.cast(ops.greater_equal(target, ops.max(y_pred, axis=-1)), "float32")


@keras.saving.register_keras_serializable(package="keras_bert_core")
class TopLogitAccuracy(keras.metrics.MeanMetricWrapper):
    """Sparse top-1 accuracy as "the target's logit is the largest": one max over the classes
    where `SparseCategoricalAccuracy` takes an argmax, which costs more on CPU over BERT's
    30k-word vocabulary (bench/ablations.py's `argmax_accuracy` variant). Only exact ties
    with another class count differently (as correct).

    Example:
    >>> import numpy as np
    >>> metric = TopLogitAccuracy()
    >>> metric.update_state(np.array([[2, 0]]), np.array([[[0.0, 1.0, 3.0], [0.0, 2.0, 1.0]]]))
    >>> float(metric.result())
    0.5
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(_target_is_top, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
