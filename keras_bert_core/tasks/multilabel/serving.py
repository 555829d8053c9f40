"""`MultiLabelClassification`: a multi-label classifier served from raw text, its thresholds
applied in the graph."""

import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask, left_align


class MultiLabelClassification(ServingTask):
    """The label set of a `BertMultiLabelClassifier`, decided in the graph by each label's
    threshold (TFLite builtin ops).

    Outputs: `logits` and `probabilities` `[batch, labels]`; `labels`, int32 multi-hot (1
    where a label is answered); `label_ids`, the answered labels' ids in id order, -1 after
    them; `label_count`, how many; and (given `label_names`) `label_names`, the answered
    names in id order, "" after them.

    Args:
        thresholds: one probability per label.
        label_names: optional label names, index = label id.
        pairs: see `ServingTask`.

    Example:
    >>> task = MultiLabelClassification([0.5, 0.2, 0.5], ["fast", "cheap", "new"])
    >>> outputs = task.outputs(tf.constant([[2.0, -1.0, -3.0]]), None)
    >>> outputs["labels"].numpy().tolist(), outputs["label_names"].numpy().tolist()
    ([[1, 1, 0]], [[b'fast', b'cheap', b'']])
    """

    pooled = True

    def __init__(self, thresholds, label_names=None, pairs=False):
        super().__init__(pairs)
        self.thresholds = [float(value) for value in thresholds]
        self.label_names = label_names

    def outputs(self, logits, features):
        probabilities = tf.sigmoid(logits)
        chosen = probabilities >= tf.constant(self.thresholds, probabilities.dtype)
        ids = tf.broadcast_to(tf.range(len(self.thresholds)), tf.shape(chosen))
        label_ids = left_align(ids, chosen, -1)
        outputs = {"logits": logits, "probabilities": probabilities,
                   "labels": tf.cast(chosen, tf.int32), "label_ids": label_ids,
                   "label_count": tf.reduce_sum(tf.cast(chosen, tf.int32), axis=-1)}
        if self.label_names is not None:
            # "" for no label: the last name (TFLite selects no strings, but gathers them).
            names = tf.constant([*self.label_names, ""])
            outputs["label_names"] = tf.gather(
                names, tf.where(label_ids >= 0, label_ids, len(self.label_names)))
        return outputs
