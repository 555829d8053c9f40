"""`TaskModel`: what every task model shares: the encoder, default training settings, config."""

import keras
import tensorflow as tf

from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.training.optimizers import BertAdamW  # compile("auto")'s default


class _CompileArgs:
    """`compile`'s arguments as given ("auto" included), serialized only when the model is
    saved, so a loaded model recompiles with the same defaults (weight-decay exclusions too)."""

    def __init__(self, **args):
        self.args = args

    def serialize(self):
        return keras.saving.serialize_keras_object(self.args)


class TaskModel(keras.Model):
    """Base of the task models: a `BertEncoder`, heads, and working `compile` defaults.

    A task model is compiled on construction, so `fit` works at once; `compile()` with no
    arguments restores the defaults, and any argument given replaces its default only.
    The model takes the encoder's dtype policy (under `"mixed_float16"` `compile` wraps the
    optimizer in a `LossScaleOptimizer`).

    XLA under `tf.distribute`: Keras compiles its whole train step, `strategy.run` over every
    replica included, as one XLA cluster, which XLA cannot place across devices
    (keras-team/keras#19005). With `compile(jit_compile=True)` under a strategy of two or
    more replicas (mirrored, multi-worker; not TPU, which compiles by itself), a task model
    instead compiles each replica's forward and backward pass on its own device and applies
    the gradients, all-reduce included, outside XLA: `model.jit_compile` is then `False`
    (Keras's whole-step XLA is off) and `model.jit_compile_per_replica` is `True`.

    Subclasses build their functional graph, call `super().__init__(encoder, inputs,
    outputs)`, set their attributes, call `self.compile()`, and define `default_compile_args`.

    Args:
        encoder: the `BertEncoder` inside the graph.
        inputs: the functional model's inputs.
        outputs: the functional model's outputs.
        **kwargs: `name`, `trainable`.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.models.BertClassifier(encoder, num_classes=2)
    >>> type(model.optimizer).__name__, model.default_learning_rate
    ('BertAdamW', 5e-05)
    >>> model.compile(optimizer="sgd")  # the task's loss and metrics stay
    >>> type(model.optimizer).__name__, type(model.loss).__name__
    ('SGD', 'SparseCategoricalCrossentropy')
    """

    default_learning_rate = 5e-5
    # Span and token models read only the sequence output: their loss has no gradient for
    # the pooler, so they leave it out of the weights they train.
    trains_pooler = True

    def __init__(self, encoder, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = encoder.dtype_policy  # functional models drop a `dtype` argument
        self.encoder = encoder

    @property
    def trainable_weights(self):
        weights = super().trainable_weights
        if self.trains_pooler or self.encoder.pooler is None:
            return weights
        pooler = {id(weight) for weight in self.encoder.pooler.weights}
        return [weight for weight in weights if id(weight) not in pooler]

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @staticmethod
    def _check_encoder(encoder):
        if not isinstance(encoder, BertEncoder):
            raise TypeError(f"encoder must be a keras_bert_core BertEncoder, got "
                            f"{type(encoder).__name__}")
        return encoder

    def default_compile_args(self):
        """The task's `loss` and `metrics` (and `loss_weights`, `weighted_metrics`)."""
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """Like `keras.Model.compile`; `"auto"` means the task's default.

        Defaults: `BertAdamW(default_learning_rate)` (1e-4 for pretraining, 5e-5 for
        fine-tuning), the task's loss and metrics.
        """
        self._compile_args = _CompileArgs(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        defaults = self.default_compile_args()
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = BertAdamW(learning_rate=self.default_learning_rate)
        if isinstance(loss, str) and loss == "auto":
            loss = defaults["loss"]
            kwargs.setdefault("loss_weights", defaults.get("loss_weights"))
        if isinstance(metrics, str) and metrics == "auto":
            metrics = defaults["metrics"]
            kwargs.setdefault("weighted_metrics", defaults.get("weighted_metrics"))
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        strategy = self.distribute_strategy
        self.jit_compile_per_replica = bool(
            self.jit_compile and strategy.num_replicas_in_sync > 1
            and not isinstance(strategy, tf.distribute.TPUStrategy))
        if self.jit_compile_per_replica:
            self.jit_compile = False
            self._replica_gradients = tf.function(
                self._loss_and_gradients, jit_compile=True, reduce_retracing=True)

    def train_step(self, data):
        if not self.jit_compile_per_replica:
            return super().train_step(data)
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred, gradients = self._replica_gradients(x, y, sample_weight)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights, strict=True))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _loss_and_gradients(self, x, y, sample_weight):
        """Keras's train step up to the gradients (the part that needs no cross-replica
        communication): forward pass, loss (tracked as Keras tracks it), scaled gradients."""
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=True)
            # Keras scales each replica's loss by 1 / replicas for the all-reduce sum and
            # tracks the unscaled mean.
            replicas = tf.distribute.get_strategy().num_replicas_in_sync
            self._loss_tracker.update_state(
                loss * replicas, sample_weight=tf.shape(tf.nest.flatten(x)[0])[0])
            loss = self.optimizer.scale_loss(loss)
        return y_pred, tape.gradient(loss, self.trainable_weights)

    def get_compile_config(self):
        return self._compile_args.serialize() if self.compiled else {}

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        # Build the optimizer now, so its saved state has variables to load into.
        self.optimizer.build(self.trainable_variables)

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        """The targets and sample weights the loss and metrics see. By default those of the
        data, where a dict of sample weights may leave outputs out (unweighted): the
        pretrainer takes `{"mlm": masked_weights}`; and dicts may hold entries for outputs
        the model lacks (a masked-LM-only pretrainer reads next-sentence data)."""
        if isinstance(y_pred, dict):
            if isinstance(y, dict):
                missing = sorted(set(y_pred) - set(y))
                if missing:
                    raise ValueError(f"The data has no targets for the model's outputs "
                                     f"{missing}; it has targets {sorted(y)}.")
                y = {name: y[name] for name in y_pred}
            if isinstance(sample_weight, dict):
                sample_weight = {name: sample_weight.get(name) for name in y_pred}
        return y, sample_weight

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y, sample_weight = self._prepare_targets(x, y, y_pred, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        y, sample_weight = self._prepare_targets(x, y, y_pred, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        encoder = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**{**config, "encoder": encoder})
