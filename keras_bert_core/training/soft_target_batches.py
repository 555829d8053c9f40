"""Batches for a `Distiller` that also learns from unlabeled texts: labeled examples weigh 1,
the others 0, so that only the teacher's soft targets train on them."""

import tensorflow as tf


def with_weights(dataset, batch_size, weight):
    """`(x, y)` batches of `batch_size` as `(x, y, sample_weight)`, each example `weight`."""
    return dataset.map(
        lambda x, y: (x, y, tf.fill([batch_size], tf.constant(weight, tf.float32))))


def with_placeholder_targets(dataset, target_spec, batch_size):
    """Batches of features alone as `(x, zeros shaped as target_spec, weight 0)`: they fit
    the labeled batches' structure, and the zero weight keeps the stand-in labels out of the
    hard loss and the metrics."""

    def placeholder(x):
        y = tf.zeros([batch_size, *target_spec.shape[1:]], target_spec.dtype)
        return x, y, tf.zeros([batch_size], tf.float32)

    return dataset.map(placeholder)


def mixed_batches(labeled, unlabeled, labeled_steps, unlabeled_steps, seed=None):
    """The batches of both, drawn in a seeded random order in proportion to their steps,
    until both are spent.

    Example:
    >>> a = tf.data.Dataset.from_tensor_slices([1, 1, 1])
    >>> b = tf.data.Dataset.from_tensor_slices([0])
    >>> sorted(int(v) for v in mixed_batches(a, b, 3, 1, seed=0))
    [0, 1, 1, 1]
    """
    return tf.data.Dataset.sample_from_datasets(
        [labeled, unlabeled], weights=[float(labeled_steps), float(unlabeled_steps)],
        seed=seed, stop_on_empty_dataset=False)
