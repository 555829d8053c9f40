"""`TaskModel`: what every task model shares: the encoder, default training settings, config."""

import keras

from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.optimizers import BertAdamW


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
    ('AdamW', 5e-05)
    >>> model.compile(optimizer="sgd")  # the task's loss and metrics stay
    >>> type(model.optimizer).__name__, type(model.loss).__name__
    ('SGD', 'SparseCategoricalCrossentropy')
    """

    default_learning_rate = 5e-5

    def __init__(self, encoder, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = encoder.dtype_policy  # functional models drop a `dtype` argument
        self.encoder = encoder

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

    def get_compile_config(self):
        return self._compile_args.serialize() if self.compiled else {}

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        # Build the optimizer now, so its saved state has variables to load into.
        self.optimizer.build(self.trainable_variables)

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        """The targets and sample weights the loss and metrics see. By default those of the
        data, where a dict of sample weights may leave outputs out (unweighted): the
        pretrainer takes `{"mlm": masked_weights}`."""
        if isinstance(sample_weight, dict) and isinstance(y_pred, dict):
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
