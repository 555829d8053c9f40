"""`Distiller`: trains a student task model on a frozen teacher's outputs, with `fit`."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_core.keras_internals import loss_tracker
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.distillation.forward import forward
from keras_bert_core.models.distillation.losses import (
    HIDDEN_LOSSES,
    attention_loss,
    hidden_state_loss,
    replicas,
    soft_target_loss,
)
from keras_bert_core.models.distillation.pairs import check_pair, from_pair_config
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.optimizers import BertAdamW, BuildsOptimizerFirst

# The key of an input batch holding the teacher's stored outputs (`load_teacher_outputs`).
TEACHER_OUTPUTS = "teacher_outputs"


@keras.saving.register_keras_serializable(package="keras_bert_core")
class Distiller(BuildsOptimizerFirst, keras.Model):
    """Trains `student` on a frozen `teacher`'s outputs, with `fit` (the loss:
    `keras_bert_core.models.distillation`'s docstring).

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
        kind = check_pair(teacher, student)
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
        outputs, internals = forward(self.teacher, x, False, self._needs_internals)
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
                x, y, student, sample_weight, training=training) * replicas()
            total += self.alpha * losses["hard_loss"]
        if self.alpha < 1:
            losses["soft_loss"] = soft_target_loss(
                self.kind, teacher, student, x, y, sample_weight, self.temperature,
                regression=self.kind is BertClassifier and self.student.num_classes == 1)
            total += (1 - self.alpha) * losses["soft_loss"]
        if self.hidden_weight:
            losses["hidden_loss"] = hidden_state_loss(teacher_internals, student_internals,
                                                      self.hidden_loss, self.hidden_projection)
            total += self.hidden_weight * losses["hidden_loss"]
        if self.attention_weight:
            losses["attention_loss"] = attention_loss(teacher_internals, student_internals)
            total += self.attention_weight * losses["attention_loss"]
        losses["loss"] = ops.cast(total, "float32")
        return losses

    def _step_outputs(self, x, y, sample_weight, student, losses):
        batch = ops.shape(tf.nest.flatten(x)[0])[0]
        loss_tracker(self).update_state(losses["loss"], sample_weight=batch)
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
            student, student_internals = forward(self.student, x, True, self._needs_internals)
            losses = self.compute_distillation_losses(
                x, y, sample_weight, teacher, student, teacher_internals, student_internals,
                training=True)
            # Each replica's share: the gradients are summed over the replicas.
            loss = self.optimizer.scale_loss(losses["loss"] / replicas())
        weights = self.trainable_weights
        gradients = tape.gradient(loss, weights)
        self.optimizer.apply_gradients(zip(gradients, weights, strict=True))
        return self._step_outputs(x, y, sample_weight, student, losses)

    def test_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        x, stored = self._features(x)
        teacher, teacher_internals = self._teacher_outputs(x, stored)
        student, student_internals = forward(self.student, x, False, self._needs_internals)
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
        return from_pair_config(cls, config)


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
