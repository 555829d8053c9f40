"""`EmbeddingDistiller`: trains a smaller embedding model to give a teacher's vectors."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_core.keras_internals import loss_tracker
from keras_bert_core.models.distillation.losses import replicas
from keras_bert_core.models.distillation.pairs import from_pair_config
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.optimizers import BertAdamW, BuildsOptimizerFirst


def vector_mse(teacher, student):
    """The mean squared difference of two batches of vectors, float32 (sentence-transformers'
    `MSELoss`: the mean over every value)."""
    return ops.mean(ops.square(ops.cast(student, "float32") - ops.cast(teacher, "float32")))


@keras.saving.register_keras_serializable(package="keras_bert_core")
class EmbeddingDistiller(BuildsOptimizerFirst, keras.Model):
    """Trains `student` to reproduce a frozen `teacher`'s vectors on unlabeled text, with
    `fit`: the mean squared error between the two models' vectors (sentence-transformers'
    model-distillation recipe). No labels: any texts of the domain will do.

    Teacher and student are `BertEmbedder`s that read the same token ids (equal
    `vocab_size`) and give vectors of one width: a student of another hidden size gets a
    linear dense layer of the teacher's `embedding_dim`, as sentence-transformers adds one
    (`Embed.build_student` does). `make_distilbert_student(teacher)` makes one of every
    other teacher layer.

    Data: batches of the models' inputs (token-id dicts `[batch, seq]`) alone, the
    teacher run in inference mode in the same step; or `(inputs, teacher vectors)`, the
    vectors computed beforehand (the teacher may then be `None`). After `fit`,
    `distiller.student` is an ordinary `BertEmbedder`: save, embed and export it. Under a
    `tf.distribute` strategy, build the three inside `strategy.scope()`.

    Args:
        teacher: the trained `BertEmbedder`, or `None` with stored vectors.
        student: the `BertEmbedder` to train.
        **kwargs: `name`.

    Logs `loss`.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
    >>> teacher = kbc.BertEmbedder(kbc.BertEncoder(config))
    >>> student = kbc.models.make_distilbert_student(teacher)  # 1 of its 2 layers
    >>> distiller = kbc.EmbeddingDistiller(teacher, student)
    >>> ids = np.array([[2, 10, 11, 3, 0], [2, 12, 3, 0, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> sorted(distiller.fit(x, verbose=0).history)
    ['loss']
    >>> distiller.student.predict(x, verbose=0).shape
    (2, 128)
    """

    def __init__(self, teacher, student, **kwargs):
        for role, model in (("teacher", teacher), ("student", student)):
            if not isinstance(model, BertEmbedder) and (role == "student" or model is not None):
                raise TypeError(f"the {role} of an EmbeddingDistiller must be a BertEmbedder, "
                                f"got {type(model).__name__}")
        if teacher is not None:
            dims = teacher.embedding_dim, student.embedding_dim
            if dims[0] != dims[1]:
                raise ValueError(f"the teacher's vectors have {dims[0]} values, the student's "
                                 f"{dims[1]}: give the student a dense layer of {dims[0]} "
                                 "units (dense_layers=[{'units': %d, 'activation': "
                                 "'linear'}])" % dims[0])
            sizes = teacher.encoder.config.vocab_size, student.encoder.config.vocab_size
            if sizes[0] != sizes[1]:
                raise ValueError(f"teacher and student vocabularies differ: vocab_size "
                                 f"{sizes[0]} vs {sizes[1]}; a student must read the "
                                 "teacher's token ids")
        super().__init__(**kwargs)
        self.dtype_policy = student.dtype_policy  # mixed_float16: compile adds loss scaling
        self.teacher = teacher
        self.student = student
        self.built = True
        self.compile()

    @property
    def trainable_weights(self):
        return list(self.student.trainable_weights)  # never the teacher's

    @property
    def trainable_variables(self):
        return self.trainable_weights

    def compile(self, optimizer="auto", **kwargs):
        """Like `keras.Model.compile`, without a loss (the distiller's is the MSE);
        `"auto"`: `BertAdamW` at the student's default learning rate."""
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = BertAdamW(learning_rate=self.student.default_learning_rate)
        for name in ("loss", "metrics", "weighted_metrics"):
            kwargs.pop(name, None)
        super().compile(optimizer=optimizer, **kwargs)
        # As `Distiller`: Keras's whole-step XLA does not place across devices.
        if self.jit_compile and self.distribute_strategy.num_replicas_in_sync > 1 \
                and not isinstance(self.distribute_strategy, tf.distribute.TPUStrategy):
            self.jit_compile = False

    def call(self, inputs, training=None):
        return self.student(inputs, training=training)

    def _targets(self, x, y):
        if y is not None:
            return ops.cast(y, "float32")
        if self.teacher is None:
            raise ValueError("this EmbeddingDistiller has no teacher: give the teacher's "
                             "vectors as y")
        return tf.stop_gradient(ops.cast(self.teacher(x, training=False), "float32"))

    def train_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        targets = self._targets(x, y)
        with tf.GradientTape() as tape:
            loss = vector_mse(targets, self.student(x, training=True))
            # Each replica's share: the gradients are summed over the replicas.
            scaled = self.optimizer.scale_loss(loss / replicas())
        weights = self.trainable_weights
        gradients = tape.gradient(scaled, weights)
        self.optimizer.apply_gradients(zip(gradients, weights, strict=True))
        return self._logged(x, loss)

    def test_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        return self._logged(x, vector_mse(self._targets(x, y), self.student(x, training=False)))

    def _logged(self, x, loss):
        batch = ops.shape(tf.nest.flatten(x)[0])[0]
        loss_tracker(self).update_state(loss, sample_weight=batch)
        return {"loss": loss_tracker(self).result()}

    def get_config(self):
        return {"teacher": (None if self.teacher is None
                            else keras.saving.serialize_keras_object(self.teacher)),
                "student": keras.saving.serialize_keras_object(self.student),
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return from_pair_config(cls, config)
