"""`BertMultiLabelClassifier`: any number of labels per text (tags, topics, toxicity types)."""

import keras
import numpy as np

from keras_bert_core.models.classifier import BertClassifier

# A label is answered when its probability reaches its threshold; untuned, the usual 0.5.
DEFAULT_THRESHOLD = 0.5


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertMultiLabelClassifier(BertClassifier):
    """Gives each label its own probability (a sigmoid per label), so a text may have none,
    one or many labels.

    The head is the family's classification head (as `BertClassifier`'s); the loss is
    binary cross-entropy on the logits, one term per label. Each label has a decision
    threshold on its probability (`thresholds`, 0.5 each until tuned, e.g. on validation
    data by `keras_bert_core.tasks.multilabel.tune_thresholds`); they are part of the
    model's config, so a saved model answers with them, and the SavedModel and TFLite
    exports apply them in the graph.

    Args:
        encoder: a `BertEncoder`.
        num_labels: number of labels.
        thresholds: None (0.5 for every label), or one probability per label.
        dropout: dropout rate before the head.
        preprocessor: None, or the layer that turns text into the inputs (see `TaskModel`).
        **kwargs: `name`, `trainable`, `task_settings`.

    Inputs: as `BertClassifier`'s. Outputs: float32 logits `[batch, num_labels]`; `fit`
    takes multi-hot labels `[batch, num_labels]` (1 where the text has the label).

    Example:
    >>> import keras_bert_core as kbc
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fast", "cheap", "phone"]
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
    >>> model = kbc.BertMultiLabelClassifier(
    ...     encoder, num_labels=2, thresholds=[0.5, 0.3],
    ...     preprocessor=kbc.BertPreprocessor(vocab, seq_length=8))
    >>> model.start_from_priors([0.25, 0.5])  # the labels' shares of the training texts
    True
    >>> model.predict(["cheap phone"], verbose=0).shape, model.thresholds
    ((1, 2), [0.5, 0.3])

    `fit` takes the texts and their multi-hot labels, e.g. `model.fit(["fast phone"],
    np.array([[1, 0]], "float32"))`.
    """

    def __init__(self, encoder, num_labels, thresholds=None, dropout=0.1, **kwargs):
        super().__init__(encoder, num_classes=num_labels, dropout=dropout, **kwargs)
        self.thresholds = thresholds

    @property
    def num_labels(self):
        return self.num_classes

    @property
    def thresholds(self):
        """The decision thresholds, a list of one probability per label, or None (0.5
        each)."""
        return None if self._thresholds is None else list(self._thresholds)

    @thresholds.setter
    def thresholds(self, thresholds):
        if thresholds is not None:
            thresholds = [float(value) for value in np.asarray(thresholds).reshape(-1)]
            if len(thresholds) != self.num_classes:
                raise ValueError(f"thresholds has {len(thresholds)} values but the model has "
                                 f"{self.num_classes} labels")
            if not all(0.0 <= value <= 1.0 for value in thresholds):
                raise ValueError(f"thresholds are probabilities, between 0 and 1: {thresholds}")
        # A tuple: Keras would track a list attribute as a `TrackedList`.
        self._thresholds = None if thresholds is None else tuple(thresholds)

    def start_from_priors(self, priors):
        """Sets the head's output bias to each label's log odds in the training data, so
        that training starts from the labels' frequencies rather than 0.5 each: with many
        rare labels, a head that starts at 0.5 spends its first steps learning to say no to
        everything, which can collapse a pretrained encoder into answering every text
        alike. A family whose head has no bias (ModernBERT) keeps its start.

        Args:
            priors: each label's share of the training texts, `[num_labels]`.

        Returns:
            Whether the bias was set.
        """
        priors = np.clip(np.asarray(priors, np.float64).reshape(-1), 1e-4, 1 - 1e-4)
        if priors.shape != (self.num_classes,):
            raise ValueError(f"priors has {priors.size} values but the model has "
                             f"{self.num_classes} labels")
        bias = self.head.dense.bias
        if bias is None:
            return False
        bias.assign(np.log(priors / (1 - priors)).astype(bias.dtype))
        return True

    def decision_thresholds(self):
        """float32 `[num_labels]`: each label's threshold on its probability."""
        if self.thresholds is None:
            return np.full([self.num_classes], DEFAULT_THRESHOLD, np.float32)
        return np.asarray(self.thresholds, np.float32)

    def default_compile_args(self):
        # Threshold 0 on the logits is probability 0.5.
        return {"loss": keras.losses.BinaryCrossentropy(from_logits=True),
                "metrics": [keras.metrics.BinaryAccuracy(name="binary_accuracy",
                                                         threshold=0.0)]}

    def get_config(self):
        config = super().get_config()
        config["num_labels"] = config.pop("num_classes")
        return {**config, "thresholds": self.thresholds}
