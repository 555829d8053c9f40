"""A multi-label classifier's answers: the label set each text gets, with the probabilities."""

import numpy as np

from keras_bert_core.models.multi_label_classifier import DEFAULT_THRESHOLD


def sigmoid(logits):
    """Each logit's probability, in float64 (numpy).

    Example:
    >>> sigmoid([[0.0, np.log(3.0)]]).tolist()
    [[0.5, 0.75]]
    """
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def decide(logits, thresholds=None):
    """int32 multi-hot `[examples, labels]`: 1 where a label's probability reaches its
    threshold (None: 0.5 each).

    Example:
    >>> decide([[2.0, -1.0], [-3.0, 0.5]], [0.5, 0.2]).tolist()
    [[1, 1], [0, 1]]
    """
    probabilities = sigmoid(logits)
    if thresholds is None:
        thresholds = np.full(probabilities.shape[-1:], DEFAULT_THRESHOLD)
    # In float32, as the exports compare them.
    return (probabilities.astype(np.float32) >= np.asarray(thresholds, np.float32)).astype(
        np.int32)


def answers(logits, label_names, thresholds=None, decimals=6):
    """A fine-tuned `BertMultiLabelClassifier`'s answers.

    Args:
        logits: `[examples, labels]`, e.g. `model.predict(texts)`.
        label_names: the labels' names, index = column (`task_settings["label_names"]`).
        thresholds: each label's decision threshold (`model.decision_thresholds()`); None:
            0.5 each.
        decimals: probabilities are rounded to this many decimals; None keeps them whole.

    Returns:
        One JSON-ready dict per example: `{"labels": [names answered, most probable first],
        "probabilities": {name: p, ...}}`.

    Example:
    >>> answers([[2.0, -1.0, 0.3]], ["fast", "cheap", "new"], decimals=3)
    [{'labels': ['fast', 'new'], 'probabilities': {'fast': 0.881, 'cheap': 0.269, 'new': 0.574}}]
    """
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.shape[-1] != len(label_names):
        raise ValueError(f"logits {logits.shape} must be [examples, {len(label_names)} "
                         "labels], one column per label name")
    chosen = decide(logits, thresholds)
    results = []
    for probabilities, row in zip(sigmoid(logits), chosen, strict=True):
        rounded = probabilities if decimals is None else probabilities.round(decimals)
        order = [index for index in np.argsort(-probabilities, kind="stable") if row[index]]
        results.append({"labels": [label_names[index] for index in order],
                        "probabilities": dict(zip(label_names, rounded.tolist(), strict=True))})
    return results
