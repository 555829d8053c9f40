"""The distillation loss terms (see `Distiller`): soft targets, hidden states, attention
transfer. Means over tokens divide by the count over all replicas, so a step under a
`tf.distribute` strategy computes the same loss as on one device."""

import tensorflow as tf
from keras import ops

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.metrics import IGNORE_LABEL
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier

HIDDEN_LOSSES = ("mse", "cosine")
_EPSILON = 1e-12  # floor of probabilities under a log (masked keys have probability 0)


def distillation_kl(teacher_logits, student_logits, temperature=1.0, axis=-1):
    """KL(softmax(teacher / T) || softmax(student / T)) * T**2 along `axis`, per row.

    The T**2 factor keeps the soft targets' gradients on the scale of the hard loss's
    (Hinton et al.). float32 whatever the inputs' dtype.

    Example:
    >>> import numpy as np
    >>> teacher = np.array([[2.0, 0.0, -1.0]], "float32")
    >>> float(distillation_kl(teacher, teacher, temperature=2.0)[0])
    0.0
    >>> bool(distillation_kl(teacher, np.zeros((1, 3), "float32"), 2.0)[0] > 0)
    True
    """
    temperature = float(temperature)
    teacher = ops.cast(teacher_logits, "float32") / temperature
    student = ops.cast(student_logits, "float32") / temperature
    log_teacher = ops.log_softmax(teacher, axis=axis)
    log_student = ops.log_softmax(student, axis=axis)
    kl = ops.sum(ops.exp(log_teacher) * (log_teacher - log_student), axis=axis)
    return kl * temperature**2


def replicas():
    """The replicas of the current `tf.distribute` strategy (1 without one)."""
    return tf.distribute.get_strategy().num_replicas_in_sync


def _sum_over_replicas(value):
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def _mean(values, weights=None):
    """This replica's share of the mean over all replicas: its weighted sum divided by the
    weight of every replica, times the replicas (the step divides each replica's loss by
    them before the gradients are summed)."""
    values = ops.cast(values, "float32")
    weights = ops.ones_like(values) if weights is None else ops.cast(weights, "float32")
    total = _sum_over_replicas(ops.sum(weights))
    return ops.sum(values * weights) / ops.maximum(total, 1e-9) * replicas()


def soft_target_loss(kind, teacher, student, x, y, sample_weight, temperature,
                     regression=False):
    """KL between the teacher's and the student's softened outputs (`kind`: the models'
    class); with `regression` (a one-score classifier), the mean squared difference to the
    teacher's scores."""
    if regression:
        return _mean(ops.mean(ops.square(ops.cast(student, "float32")
                                         - ops.cast(teacher, "float32")), axis=-1))
    if kind in (BertClassifier, BertMultipleChoice):
        return _mean(distillation_kl(teacher, student, temperature))
    if kind is BertSpanLabeler:
        return 0.5 * (_mean(distillation_kl(teacher["start_logits"],
                                            student["start_logits"], temperature))
                      + _mean(distillation_kl(teacher["end_logits"],
                                              student["end_logits"], temperature)))
    if kind is BertTokenClassifier:
        weights = ops.cast(x["padding_mask"] > 0, "float32")
        if y is not None:  # the tokens that carry a label: each word's first piece
            weights = weights * ops.cast(ops.not_equal(y, IGNORE_LABEL), "float32")
        return _mean(distillation_kl(teacher, student, temperature), weights)
    # Pretrainer: the masked-LM predictions, without the slots that pad them.
    weights = None
    if isinstance(sample_weight, dict) and sample_weight.get("mlm") is not None:
        weights = sample_weight["mlm"]
    return _mean(distillation_kl(teacher["mlm"], student["mlm"], temperature), weights)


def hidden_state_loss(teacher, student, distance="mse", projection=None):
    """MSE or cosine distance between the last layers' states at real tokens (`teacher`,
    `student`: `forward`'s internals), the student's through `projection` if given."""
    states = ops.cast(student["sequence_output"], "float32")
    if projection is not None:
        states = projection(states)
    targets = ops.cast(teacher["sequence_output"], "float32")
    if distance == "mse":
        distances = ops.mean(ops.square(states - targets), axis=-1)
    else:
        norms = ops.sqrt(ops.sum(ops.square(states), -1) * ops.sum(ops.square(targets), -1))
        distances = 1.0 - ops.sum(states * targets, -1) / ops.maximum(norms, _EPSILON)
    return _mean(distances, student["padding_mask"] > 0)


def attention_loss(teacher, student):
    """MiniLM's attention transfer: KL between the last layers' attention probabilities at
    real query tokens, head by head with equal head counts, else of the head averages."""
    targets = ops.cast(teacher["attention_probs"], "float32")
    probs = ops.cast(student["attention_probs"], "float32")
    if targets.shape[1] != probs.shape[1]:  # head counts differ: compare head averages
        targets = ops.mean(targets, axis=1, keepdims=True)
        probs = ops.mean(probs, axis=1, keepdims=True)
    kl = ops.sum(targets * (ops.log(ops.maximum(targets, _EPSILON))
                            - ops.log(ops.maximum(probs, _EPSILON))), axis=-1)
    queries = ops.cast(student["padding_mask"] > 0, "float32")[:, None, :]
    return _mean(kl, queries * ops.ones_like(kl))
