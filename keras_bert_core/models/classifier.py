"""`BertClassifier`: sequence and sequence-pair classification or regression."""

import keras

from keras_bert_core.models.encoder import encoder_inputs
from keras_bert_core.models.sequence_head import head_features, read_positions, sequence_head
from keras_bert_core.models.task import TaskModel


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertClassifier(TaskModel):
    """Classifies a text, or a pair of texts, from the encoder's pooled `[CLS]` output.

    The head is the encoder family's (`BertConfig.classifier_activation`): BERT and ALBERT
    classify the pooled output; RoBERTa and DistilBERT put a hidden dense layer (tanh,
    ReLU) on the first token's output; ModernBERT a dense layer, GELU and a LayerNorm on
    the first token's output or the mean of all (`BertConfig.classifier_pooling`).

    Pairs are the same model: the preprocessor packs both texts into one row with segment
    ids 0 and 1. With `num_classes=1` it is a regression model (a score per input, mean
    squared error, as for STS-B). Defaults: sparse categorical cross-entropy on the logits
    and `accuracy` (regression: mean squared error and `mean_absolute_error`), optimizer
    `BertAdamW(5e-5)`.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of classes; 1 for regression.
        dropout: dropout rate on the pooled output.
        preprocessor: None, or the layer that turns text into the inputs (e.g.
            `kbc.BertPreprocessor`); `fit`, `evaluate` and `predict` then take text too
            (see `TaskModel`).
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]`; with
    a preprocessor also texts, or a tuple `(first, second)` of texts for pairs.

    Outputs: float32 logits `[batch, num_classes]`. `fit` takes integer labels `[batch]`
    (regression: float scores `[batch]` or `[batch, 1]`).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertClassifier(encoder, num_classes=3)
    >>> ids = np.array([[2, 10, 11, 3, 12, 3], [2, 13, 3, 0, 0, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.array([[0, 0, 0, 0, 1, 1]] * 2, "int32"),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> history = model.fit(x, np.array([2, 0]), verbose=0)
    >>> model.predict(x, verbose=0).shape
    (2, 3)
    """

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        config = self._check_encoder(encoder).config
        inputs = encoder_inputs()
        use_pooler = config.classifier_activation is None
        head = sequence_head(config, num_classes, dropout, use_pooler, encoder.dtype_policy,
                             "classifier")
        # Where only [CLS] is read, the encoder's last block computes that position alone.
        encoded = encoder.encode(inputs, output_positions=read_positions(config))
        logits = head(head_features(config, encoded, inputs["padding_mask"], use_pooler))
        super().__init__(encoder, inputs, logits, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.head = head
        self.compile()

    def default_compile_args(self):
        if self.num_classes == 1:
            return {"loss": keras.losses.MeanSquaredError(),
                    "metrics": [keras.metrics.MeanAbsoluteError()]}
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "dropout": self.dropout}
