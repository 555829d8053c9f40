"""Per-label decision thresholds tuned on validation data, each maximizing its label's F1."""

import numpy as np

# A label without a positive example in the validation data keeps the untuned threshold:
# no cut there says anything about its F1.
UNTUNED = 0.5


def _best_cut(probabilities, truth):
    """The threshold on `probabilities` (one label's, `[examples]`) with the best F1 against
    0/1 `truth`: halfway between the last probability answered and the next; among equal
    F1s, the one nearest `UNTUNED`."""
    positives = truth.sum()
    if positives == 0:
        return UNTUNED
    order = np.argsort(-probabilities, kind="stable")
    ranked, hits = probabilities[order], np.cumsum(truth[order])
    answered = np.arange(1, len(ranked) + 1)
    # Only cut between different probabilities: a threshold cannot split equal ones.
    cuttable = np.append(ranked[:-1] > ranked[1:], True)
    f1 = np.where(cuttable, 2 * hits / (answered + positives), -1.0)
    below = np.append(ranked[1:], 0.0)
    cuts = (ranked + below) / 2
    best = np.flatnonzero(f1 >= f1.max() - 1e-12)
    return float(cuts[best[np.argmin(np.abs(cuts[best] - UNTUNED))]])


def tune_thresholds(probabilities, truth):
    """Each label's decision threshold: the probability cut that maximizes its F1 on
    validation data.

    Args:
        probabilities: `[examples, labels]`, the model's (sigmoid) probabilities.
        truth: 0/1 `[examples, labels]`, the labels the examples have.

    Returns:
        A list of one threshold per label: a label is answered when its probability is at
        least its threshold. A label no validation example has keeps 0.5.

    Example: the second label is rare and the model never gives it 0.5, yet ranks it right.
    >>> thresholds = tune_thresholds([[0.9, 0.30], [0.2, 0.05], [0.7, 0.35], [0.1, 0.10]],
    ...                              [[1, 1], [0, 0], [1, 1], [0, 0]])
    >>> [round(threshold, 3) for threshold in thresholds]
    [0.45, 0.2]
    """
    probabilities = np.asarray(probabilities, np.float64)
    truth = np.asarray(truth) > 0
    if probabilities.shape != truth.shape or probabilities.ndim != 2:
        raise ValueError(f"probabilities {probabilities.shape} and truth {truth.shape} must "
                         "both be [examples, labels]")
    return [_best_cut(probabilities[:, label], truth[:, label])
            for label in range(probabilities.shape[1])]
