"""Multi-label scores: micro and macro F1, and each label's precision and recall."""

import numpy as np


def label_counts(truth, predicted):
    """`(true positives, false positives, false negatives)`, int64 `[num_labels]` each, of
    0/1 arrays `[num_examples, num_labels]`."""
    truth = np.asarray(truth) > 0
    predicted = np.asarray(predicted) > 0
    return ((truth & predicted).sum(0), (~truth & predicted).sum(0),
            (truth & ~predicted).sum(0))


def _ratio(numerator, denominator):
    """numerator / denominator, 0 where the denominator is 0 (scikit-learn's
    `zero_division=0`)."""
    numerator = np.asarray(numerator, np.float64)
    denominator = np.asarray(denominator, np.float64)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator),
                     where=denominator > 0)


def multilabel_scores(truth, predicted, label_names):
    """Scores of predicted label sets against the true ones.

    Args:
        truth: 0/1 `[num_examples, num_labels]`, the labels each example has.
        predicted: 0/1 `[num_examples, num_labels]`, the labels answered.
        label_names: the names of the columns.

    Returns:
        `micro_f1`, `micro_precision`, `micro_recall` (over every decision), `macro_f1`
        (the mean of the labels' F1), `exact_match` (the share of examples whose whole set
        is right), and `labels`: per label name its `precision`, `recall`, `f1` and
        `support` (examples that have it). A ratio over nothing counts 0, as scikit-learn's
        `f1_score(..., zero_division=0)`.

    Example:
    >>> scores = multilabel_scores([[1, 0], [1, 1]], [[1, 1], [0, 1]], ["a", "b"])
    >>> round(scores["micro_f1"], 3), round(scores["macro_f1"], 3), scores["labels"]["a"]["recall"]
    (0.667, 0.667, 0.5)
    """
    truth = np.asarray(truth)
    if truth.shape != np.shape(predicted) or truth.shape[-1] != len(label_names):
        raise ValueError(f"truth {truth.shape} and predictions {np.shape(predicted)} must be "
                         f"[examples, {len(label_names)} labels]")
    tp, fp, fn = label_counts(truth, predicted)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)
    exact = np.all((truth > 0) == (np.asarray(predicted) > 0), axis=1)
    return {
        "micro_f1": float(_ratio(2 * tp.sum(), 2 * tp.sum() + fp.sum() + fn.sum())),
        "micro_precision": float(_ratio(tp.sum(), tp.sum() + fp.sum())),
        "micro_recall": float(_ratio(tp.sum(), tp.sum() + fn.sum())),
        "macro_f1": float(f1.mean()),
        "exact_match": float(exact.mean()) if len(exact) else 0.0,
        "labels": {name: {"precision": float(precision[i]), "recall": float(recall[i]),
                          "f1": float(f1[i]), "support": int(tp[i] + fn[i])}
                   for i, name in enumerate(label_names)},
    }
