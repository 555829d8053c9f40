"""Knowledge distillation: `Distiller` trains a student task model (or pretrainer) on a
frozen teacher's soft targets with `fit`; `make_distilbert_student` makes a student of
every other teacher layer, weights copied (DistilBERT's initialization).

The loss, for a teacher and a student of the same kind:

    alpha * hard + (1 - alpha) * soft + hidden_weight * hidden + attention_weight * attention

- hard: the student's own default loss on the labels (its `compile` loss);
- soft: KL(softmax(teacher / T) || softmax(student / T)) * T**2 over the classes, the
  start and end positions, each token's tags, the choices or the masked-LM vocabulary (a
  regression classifier: the mean squared difference to the teacher's scores);
- hidden: MSE or cosine distance between the last layers' sequence outputs at real tokens,
  the student's through a learned dense projection when the widths differ;
- attention: MiniLM's last-layer attention transfer, KL between the teacher's and the
  student's attention probabilities at real query tokens (head by head with equal head
  counts, else averaged over the heads).

Means over tokens divide by the count over all replicas, so a step under a `tf.distribute`
strategy computes the same loss as on one device.
"""

import dataclasses

import keras
import tensorflow as tf
from keras import ops

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_core.models.metrics import IGNORE_LABEL
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.optimizers import BertAdamW  # compile("auto")'s default

# The kinds of model a distiller takes, and what must match between teacher and student.
KINDS = {BertClassifier: "num_classes", BertSpanLabeler: None,
         BertTokenClassifier: "num_classes", BertMultipleChoice: "num_choices",
         BertPretrainer: None}
# The key of an input batch holding the teacher's stored outputs (`load_teacher_outputs`).
TEACHER_OUTPUTS = "teacher_outputs"
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


def _kind(model, role):
    for kind in KINDS:
        if isinstance(model, kind):
            return kind
    names = ", ".join(kind.__name__ for kind in KINDS)
    raise TypeError(f"the {role} must be a keras_bert_core task model ({names}), got "
                    f"{type(model).__name__}")


def check_vocabularies(teacher_vocabulary, student_vocabulary):
    """Raises `ValueError` unless the two vocabularies are the same tokens in the same order
    (a student must read the teacher's token ids). Each is a list of tokens or anything
    with a `vocabulary` list (a `BertPreprocessor`).

    Example:
    >>> check_vocabularies(["[PAD]", "a"], ["[PAD]", "a"])
    >>> check_vocabularies(["[PAD]", "a"], ["[PAD]", "b", "c"])
    Traceback (most recent call last):
    ...
    ValueError: teacher and student vocabularies differ: the teacher's has 2 tokens, the \
student's 3 (first difference at id 1: 'a' vs 'b'); a student must use the teacher's vocabulary
    """
    teacher = list(getattr(teacher_vocabulary, "vocabulary", teacher_vocabulary))
    student = list(getattr(student_vocabulary, "vocabulary", student_vocabulary))
    if teacher == student:
        return
    index = next((i for i, (a, b) in enumerate(zip(teacher, student, strict=False))
                  if a != b),
                 min(len(teacher), len(student)))
    first = (f"first difference at id {index}: "
             f"{teacher[index] if index < len(teacher) else None!r} vs "
             f"{student[index] if index < len(student) else None!r}")
    raise ValueError(f"teacher and student vocabularies differ: the teacher's has "
                     f"{len(teacher)} tokens, the student's {len(student)} ({first}); a "
                     "student must use the teacher's vocabulary")


def _check_pair(teacher, student):
    kind = _kind(student, "student")
    if teacher is None:
        return kind
    if _kind(teacher, "teacher") is not kind:
        raise TypeError(f"teacher and student must be the same kind of model: the teacher is "
                        f"a {type(teacher).__name__}, the student a {kind.__name__}")
    attribute = KINDS[kind]
    if attribute and getattr(teacher, attribute) != getattr(student, attribute):
        raise ValueError(f"teacher and student differ in {attribute}: "
                         f"{getattr(teacher, attribute)} vs {getattr(student, attribute)}")
    sizes = teacher.encoder.config.vocab_size, student.encoder.config.vocab_size
    if sizes[0] != sizes[1]:
        raise ValueError(f"teacher and student vocabularies differ: the teacher has vocab_size "
                         f"{sizes[0]}, the student {sizes[1]}; a student must read the "
                         "teacher's token ids (build it with the teacher's vocabulary)")
    return kind


def _forward(model, x, training, internals):
    """`(outputs, internals)` of a task model: its outputs as `model(x)` gives them and, if
    `internals`, the last layer's `sequence_output` at every position, its
    `attention_probs` and the rows' `padding_mask` (multiple choice: one row per choice)."""
    if not internals:
        return model(x, training=training), None
    if isinstance(model, BertMultipleChoice):
        rows = {name: ops.concatenate(ops.unstack(x[name], axis=1), axis=0)
                for name in INPUT_NAMES}
    else:
        rows = {name: x[name] for name in INPUT_NAMES}
    encoded = model.encoder.encode(rows, training=training, return_attention=True)
    sequence = encoded["sequence_output"]
    config = model.encoder.config
    # The heads as each task model's graph applies them (its last block computes only the
    # positions it reads; here every position is computed, for the hidden-state losses).
    if isinstance(model, BertClassifier):
        features = (encoded["pooled_output"] if config.classifier_activation is None
                    else sequence[:, 0, :])
        outputs = model.head(features, training=training)
    elif isinstance(model, BertMultipleChoice):
        features = encoded["pooled_output"] if config.pooler else sequence[:, 0, :]
        scores = model.head(features, training=training)
        outputs = ops.transpose(ops.reshape(scores, (model.num_choices, -1)))
    elif isinstance(model, BertSpanLabeler):
        outputs = model.head(sequence, rows["padding_mask"])
    elif isinstance(model, BertTokenClassifier):
        outputs = model.head(sequence, training=training)
    else:
        outputs = {"mlm": model.masked_lm(sequence, x["masked_positions"], training=training)}
        if model.next_sentence is not None:
            outputs["nsp"] = model.next_sentence(encoded["pooled_output"], training=training)
    return outputs, {"sequence_output": sequence, "attention_probs": encoded["attention_probs"],
                     "padding_mask": rows["padding_mask"]}


def _replicas():
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
    return ops.sum(values * weights) / ops.maximum(total, 1e-9) * _replicas()


@keras.saving.register_keras_serializable(package="keras_bert_core")
class Distiller(keras.Model):
    """Trains `student` on a frozen `teacher`'s outputs, with `fit` (see the module docstring
    for the loss).

    Teacher and student are task models of the same kind and outputs (`BertClassifier`
    with the same `num_classes`, regression included, `BertSpanLabeler`,
    `BertTokenClassifier`, `BertMultipleChoice`), or two `BertPretrainer`s for general
    distillation on `pretraining_dataset` batches (DistilBERT's recipe:
    `Distiller.general`). They read the same token ids: their `vocab_size` must be equal
    (`check_vocabularies` compares the tokens themselves).

    The teacher runs in inference mode in the same step and its weights never train. Data:
    the student's usual `(x, y)` or `(x, y, sample_weight)` batches; `sample_weight` weighs
    each example's hard loss only, so 0 marks an unlabeled example whose soft targets still
    train; `x` alone trains on soft targets only. Batches from `load_teacher_outputs` carry
    the teacher's stored outputs, and the teacher is not run (it may then be `None`, when
    the hidden and attention losses are off).

    After `fit`, `distiller.student` is an ordinary task model: save, evaluate and export it.
    `distiller.predict` gives the student's outputs. Under a `tf.distribute` strategy, build
    teacher, student and distiller inside `strategy.scope()`. Under `"mixed_float16"` (the
    student's policy) `compile` adds loss scaling. Keras's whole-step XLA does not place
    across devices (see `TaskModel`): with two or more replicas `jit_compile` is turned off.

    Args:
        teacher: the trained task model, or `None` with stored outputs.
        student: the task model to train.
        temperature: T of the soft targets.
        alpha: weight of the hard-label loss; the soft targets weigh `1 - alpha`.
        hidden_weight: weight of the last-layer hidden-state loss (0: off).
        hidden_loss: `"mse"` or `"cosine"` (DistilBERT's).
        attention_weight: weight of the last-layer attention transfer (0: off).
        **kwargs: `name`.

    Logs `loss` (the total), `hard_loss`, `soft_loss`, `hidden_loss` and `attention_loss`
    (those with a weight) and the student's metrics.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
    >>> teacher = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> student = kbc.models.make_distilbert_student(teacher)  # or any BertClassifier
    >>> distiller = kbc.Distiller(teacher, student, temperature=2.0, alpha=0.5,
    ...                           hidden_weight=1.0, attention_weight=1.0)
    >>> ids = np.array([[2, 10, 11, 3, 0], [2, 12, 3, 0, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> history = distiller.fit(x, np.array([1, 0]), verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'attention_loss', 'hard_loss', 'hidden_loss', 'loss', 'soft_loss']
    >>> distiller.student.predict(x, verbose=0).shape
    (2, 2)
    """

    def __init__(self, teacher, student, temperature=2.0, alpha=0.5, hidden_weight=0.0,
                 hidden_loss="mse", attention_weight=0.0, **kwargs):
        kind = _check_pair(teacher, student)
        problems = []
        if not float(temperature) > 0:
            problems.append(f"temperature must be positive, got {temperature!r}")
        if not 0.0 <= float(alpha) <= 1.0:
            problems.append(f"alpha must be in [0, 1], got {alpha!r}")
        for name, value in (("hidden_weight", hidden_weight),
                            ("attention_weight", attention_weight)):
            if float(value) < 0:
                problems.append(f"{name} must be >= 0, got {value!r}")
        if hidden_loss not in HIDDEN_LOSSES:
            problems.append(f"hidden_loss must be one of {HIDDEN_LOSSES}, got {hidden_loss!r}")
        if teacher is None and (hidden_weight or attention_weight):
            problems.append("the hidden-state and attention losses need the teacher itself, "
                            "not stored outputs")
        if problems:
            raise ValueError("Invalid Distiller: " + "; ".join(problems))
        super().__init__(**kwargs)
        self.dtype_policy = student.dtype_policy  # mixed_float16: compile adds loss scaling
        self.teacher = teacher
        self.student = student
        self.kind = kind
        self.temperature = float(temperature)
        self.alpha = float(alpha)
        self.hidden_weight = float(hidden_weight)
        self.hidden_loss = hidden_loss
        self.attention_weight = float(attention_weight)
        self.hidden_projection = None
        if self.hidden_weight and teacher is not None:
            widths = (student.encoder.config.hidden_size, teacher.encoder.config.hidden_size)
            if widths[0] != widths[1]:
                # Maps the student's states to the teacher's width (TinyBERT's W_h); trained
                # with the student, not part of it.
                self.hidden_projection = keras.layers.Dense(
                    widths[1], dtype="float32", name="hidden_projection")
                self.hidden_projection.build((None, None, widths[0]))
        self.hard_loss_tracker = keras.metrics.Mean(name="hard_loss") if self.alpha else None
        self.soft_loss_tracker = (keras.metrics.Mean(name="soft_loss")
                                  if self.alpha < 1 else None)
        self.hidden_loss_tracker = (keras.metrics.Mean(name="hidden_loss")
                                    if self.hidden_weight else None)
        self.attention_loss_tracker = (keras.metrics.Mean(name="attention_loss")
                                       if self.attention_weight else None)
        self.built = True
        self.compile()

    @classmethod
    def general(cls, teacher, student, **overrides):
        """General (task-agnostic) distillation of a `BertPretrainer` into a student
        pretrainer with DistilBERT's recipe: masked-LM soft targets, the hard masked-LM
        loss and the cosine distance of the hidden states weighted 5 : 2 : 1, T = 2.
        Train on `pretraining_dataset(..., pair_task=None)` batches; `overrides` replace
        any setting.

        Example:
        >>> import keras_bert_core as kbc
        >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
        >>> teacher = kbc.BertPretrainer(kbc.BertEncoder(config), next_sentence=False)
        >>> distiller = kbc.Distiller.general(teacher, kbc.models.make_distilbert_student(teacher))
        >>> distiller.hidden_loss, round(distiller.alpha, 3), round(distiller.hidden_weight, 3)
        ('cosine', 0.286, 0.143)
        """
        for role, model in (("teacher", teacher), ("student", student)):
            if not isinstance(model, BertPretrainer):
                raise TypeError(f"general distillation takes BertPretrainers; the {role} is "
                                f"a {type(model).__name__}")
        settings = {"temperature": 2.0, "alpha": 2 / 7, "hidden_weight": 1 / 7,
                    "hidden_loss": "cosine", **overrides}
        return cls(teacher, student, **settings)

    @property
    def trainable_weights(self):
        # The student's (a span or token model leaves its unused pooler out) and the
        # projection's; never the teacher's.
        weights = list(self.student.trainable_weights)
        if self.hidden_projection is not None:
            weights += self.hidden_projection.trainable_weights
        return weights

    @property
    def trainable_variables(self):
        return self.trainable_weights

    def compile(self, optimizer="auto", *, metrics="auto", weighted_metrics="auto", **kwargs):
        """Like `keras.Model.compile`, without a loss (the distiller has its own); `"auto"`:
        `BertAdamW` at the student's default learning rate, the student's metrics, weighted
        by `sample_weight` (so examples of weight 0, unlabeled, do not count)."""
        defaults = self.student.default_compile_args()
        if _is_auto(optimizer):
            optimizer = BertAdamW(learning_rate=self.student.default_learning_rate)
        if _is_auto(weighted_metrics):
            weighted_metrics = defaults.get("weighted_metrics") if _is_auto(metrics) else None
        if _is_auto(metrics):
            # All weighted: a 0 weight marks an unlabeled example, whose label is a stand-in.
            metrics, weighted_metrics = None, _merged_metrics(defaults["metrics"],
                                                              weighted_metrics)
        kwargs.pop("loss", None)
        super().compile(optimizer=optimizer, metrics=metrics, weighted_metrics=weighted_metrics,
                        **kwargs)
        if self.jit_compile and self.distribute_strategy.num_replicas_in_sync > 1 \
                and not isinstance(self.distribute_strategy, tf.distribute.TPUStrategy):
            self.jit_compile = False

    def call(self, inputs, training=None):
        return self.student(self._features(inputs)[0], training=training)

    @staticmethod
    def _features(x):
        """`(the model's inputs, the teacher's stored outputs or None)`."""
        if not isinstance(x, dict) or TEACHER_OUTPUTS not in x:
            return x, None
        return {k: v for k, v in x.items() if k != TEACHER_OUTPUTS}, x[TEACHER_OUTPUTS]

    @property
    def _needs_internals(self):
        return bool(self.hidden_weight or self.attention_weight)

    def _teacher_outputs(self, x, stored):
        """`(outputs, internals or None)` of the teacher, computed or stored; constants."""
        if stored is not None:
            if self._needs_internals:
                raise ValueError("the hidden-state and attention losses need the teacher "
                                 "itself: stored teacher outputs hold its logits only")
            return tf.nest.map_structure(tf.stop_gradient, stored), None
        if self.teacher is None:
            raise ValueError("this Distiller has no teacher: every batch must carry the "
                             f"teacher's stored outputs under x[{TEACHER_OUTPUTS!r}] "
                             "(load_teacher_outputs)")
        outputs, internals = _forward(self.teacher, x, False, self._needs_internals)
        outputs = tf.nest.map_structure(tf.stop_gradient, outputs)
        if internals is not None:
            internals = tf.nest.map_structure(tf.stop_gradient, internals)
        return outputs, internals

    def compute_distillation_losses(self, x, y, sample_weight, teacher, student,
                                    teacher_internals=None, student_internals=None,
                                    training=False):
        """The loss terms that have a weight (`hard_loss`, `soft_loss`, `hidden_loss`,
        `attention_loss`) and their weighted total `loss`, as a dict of float32 scalars.

        Under a strategy of several replicas each is this replica's share, such that their
        mean over the replicas is the loss of the global batch (token means divide by the
        tokens of every replica); `train_step` divides by the replicas before the gradients
        are summed. `teacher` and `student` are the models' outputs; the internals (from
        `encode`) are needed by the hidden-state and attention terms."""
        losses = {}
        total = 0.0
        if self.alpha and y is not None:
            # The student's compiled loss, scaled by Keras for the replicas: undo that here.
            losses["hard_loss"] = self.student.compute_loss(
                x, y, student, sample_weight, training=training) * _replicas()
            total += self.alpha * losses["hard_loss"]
        if self.alpha < 1:
            losses["soft_loss"] = self._soft_loss(x, y, sample_weight, teacher, student)
            total += (1 - self.alpha) * losses["soft_loss"]
        if self.hidden_weight:
            losses["hidden_loss"] = self._hidden_loss(teacher_internals, student_internals)
            total += self.hidden_weight * losses["hidden_loss"]
        if self.attention_weight:
            losses["attention_loss"] = self._attention_loss(teacher_internals,
                                                            student_internals)
            total += self.attention_weight * losses["attention_loss"]
        losses["loss"] = ops.cast(total, "float32")
        return losses

    def _soft_loss(self, x, y, sample_weight, teacher, student):
        kind, temperature = self.kind, self.temperature
        if kind is BertClassifier and self.student.num_classes == 1:
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

    def _hidden_loss(self, teacher, student):
        states = ops.cast(student["sequence_output"], "float32")
        if self.hidden_projection is not None:
            states = self.hidden_projection(states)
        targets = ops.cast(teacher["sequence_output"], "float32")
        if self.hidden_loss == "mse":
            distance = ops.mean(ops.square(states - targets), axis=-1)
        else:
            norms = ops.sqrt(ops.sum(ops.square(states), -1) * ops.sum(ops.square(targets), -1))
            distance = 1.0 - ops.sum(states * targets, -1) / ops.maximum(norms, _EPSILON)
        return _mean(distance, student["padding_mask"] > 0)

    def _attention_loss(self, teacher, student):
        targets = ops.cast(teacher["attention_probs"], "float32")
        probs = ops.cast(student["attention_probs"], "float32")
        if targets.shape[1] != probs.shape[1]:  # head counts differ: compare head averages
            targets = ops.mean(targets, axis=1, keepdims=True)
            probs = ops.mean(probs, axis=1, keepdims=True)
        kl = ops.sum(targets * (ops.log(ops.maximum(targets, _EPSILON))
                                - ops.log(ops.maximum(probs, _EPSILON))), axis=-1)
        queries = ops.cast(student["padding_mask"] > 0, "float32")[:, None, :]
        return _mean(kl, queries * ops.ones_like(kl))

    def _step_outputs(self, x, y, sample_weight, student, losses):
        batch = ops.shape(tf.nest.flatten(x)[0])[0]
        self._loss_tracker.update_state(losses["loss"], sample_weight=batch)
        for name in ("hard_loss", "soft_loss", "hidden_loss", "attention_loss"):
            tracker = getattr(self, f"{name}_tracker")
            if tracker is not None and name in losses:
                tracker.update_state(losses[name], sample_weight=batch)
        return self.compute_metrics(x, y, student, sample_weight)

    def train_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        x, stored = self._features(x)
        teacher, teacher_internals = self._teacher_outputs(x, stored)
        with tf.GradientTape() as tape:
            student, student_internals = _forward(self.student, x, True, self._needs_internals)
            losses = self.compute_distillation_losses(
                x, y, sample_weight, teacher, student, teacher_internals, student_internals,
                training=True)
            # Each replica's share: the gradients are summed over the replicas.
            loss = self.optimizer.scale_loss(losses["loss"] / _replicas())
        weights = self.trainable_weights
        gradients = tape.gradient(loss, weights)
        self.optimizer.apply_gradients(zip(gradients, weights, strict=True))
        return self._step_outputs(x, y, sample_weight, student, losses)

    def test_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        x, stored = self._features(x)
        teacher, teacher_internals = self._teacher_outputs(x, stored)
        student, student_internals = _forward(self.student, x, False, self._needs_internals)
        losses = self.compute_distillation_losses(
            x, y, sample_weight, teacher, student, teacher_internals, student_internals)
        return self._step_outputs(x, y, sample_weight, student, losses)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        # The student's metrics, on the targets as the student reads them (Keras also
        # builds the metrics with this before the first step). Unlabeled data has none.
        if y is None:
            return self.get_metrics_result()
        x = self._features(x)[0]
        targets, weights = self.student._prepare_targets(x, y, y_pred, sample_weight)
        return super().compute_metrics(x, targets, y_pred, sample_weight=weights)

    def get_metrics_result(self):
        # Without labels yet (soft targets only) the student's metrics are not built.
        results = {}
        for metric in self.metrics:
            if not getattr(metric, "built", True):
                continue
            result = metric.result()
            results.update(result if isinstance(result, dict) else {metric.name: result})
        return results

    def get_config(self):
        return {
            "teacher": (None if self.teacher is None
                        else keras.saving.serialize_keras_object(self.teacher)),
            "student": keras.saving.serialize_keras_object(self.student),
            "temperature": self.temperature,
            "alpha": self.alpha,
            "hidden_weight": self.hidden_weight,
            "hidden_loss": self.hidden_loss,
            "attention_weight": self.attention_weight,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        teacher = config.pop("teacher")
        return cls(None if teacher is None else keras.saving.deserialize_keras_object(teacher),
                   keras.saving.deserialize_keras_object(config.pop("student")), **config)


def _is_auto(argument):
    return isinstance(argument, str) and argument == "auto"


def _merged_metrics(*groups):
    """Metric lists, or dicts of them by output, as one (None for none)."""
    groups = [group for group in groups if group]
    if not groups:
        return None
    if not any(isinstance(group, dict) for group in groups):
        return [metric for group in groups for metric in group]
    merged = {}
    for group in groups:
        for output, metrics in group.items():
            merged.setdefault(output, []).extend(metrics)
    return merged


def make_distilbert_student(teacher, teacher_layers=None):
    """A student of every other layer of the teacher's encoder, same width, with the
    teacher's weights: embeddings, the chosen layers, pooler and heads copied (DistilBERT's
    initialization; its authors took layers 0, 2, 4, 7, 9, 11 of BERT-base).

    Args:
        teacher: a task model or `BertPretrainer` (the student is the same kind, with the
            same settings), or a `BertEncoder` (the student is an encoder).
        teacher_layers: the teacher's layers to copy, in order; default every other one from
            the first, `range(0, num_layers, 2)`.

    Returns the student, built under the global dtype policy.

    Example:
    >>> import keras_bert_core as kbc
    >>> teacher = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "mini", vocab_size=100)), num_classes=3)
    >>> student = make_distilbert_student(teacher)
    >>> student.encoder.config.num_layers, student.num_classes
    (2, 3)
    """
    encoder = teacher if isinstance(teacher, BertEncoder) else teacher.encoder
    if not isinstance(teacher, BertEncoder):
        _kind(teacher, "teacher")
    config = encoder.config
    if config.num_layer_groups is not None:
        raise ValueError("the teacher's layers share weights (ALBERT's num_layer_groups): "
                         "there are no separate layers to copy")
    layers = (list(range(0, config.num_layers, 2)) if teacher_layers is None
              else [int(index) for index in teacher_layers])
    if not layers or any(not 0 <= i < config.num_layers for i in layers):
        raise ValueError(f"teacher_layers must be indices of the teacher's "
                         f"{config.num_layers} layers, got {teacher_layers!r}")
    student_encoder = BertEncoder(dataclasses.replace(config, num_layers=len(layers)),
                                  one_hot_embeddings=encoder.one_hot_embeddings,
                                  remat=encoder.remat)
    student_encoder.embeddings.set_weights(encoder.embeddings.get_weights())
    for block, index in zip(student_encoder.blocks, layers, strict=True):
        block.set_weights(encoder.blocks[index].get_weights())
    for name in ("final_norm", "pooler"):
        if getattr(encoder, name) is not None:
            getattr(student_encoder, name).set_weights(getattr(encoder, name).get_weights())
    if teacher is encoder:
        return student_encoder
    settings = {k: v for k, v in teacher.get_config().items()
                if k not in ("encoder", "name", "trainable")}
    student = type(teacher)(student_encoder, **settings)
    if isinstance(teacher, BertPretrainer):
        student.set_head_weights(teacher.get_head_weights())
    else:
        student.head.set_weights(teacher.head.get_weights())
    return student
