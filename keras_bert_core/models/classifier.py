"""`BertClassifier`: sequence and sequence-pair classification or regression."""

import keras

from keras_bert_core.layers.window_aggregation import WindowAggregation, WindowRows
from keras_bert_core.models.encoder import INPUT_NAMES, encoder_inputs
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
        window_aggregation: None, or how the logits of a long text's windows join into
            the text's: `"mean"`, `"max"` or `"attention"` (`layers.WindowAggregation`).
            The model then takes windows `[batch, windows, seq]` (missing windows all
            padding), as `kbc.LongTextPreprocessor` makes them, and answers per text.
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

    def __init__(self, encoder, num_classes, dropout=0.1, window_aggregation=None, **kwargs):
        config = self._check_encoder(encoder).config
        if window_aggregation is None:
            inputs = rows = encoder_inputs()
        else:
            inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name)
                      for name in INPUT_NAMES}
            flatten = WindowRows(name="window_rows")
            rows = {name: flatten(value) for name, value in inputs.items()}
        use_pooler = config.classifier_activation is None
        head = sequence_head(config, num_classes, dropout, use_pooler, encoder.dtype_policy,
                             "classifier")
        # Where only [CLS] is read, the encoder's last block computes that position alone.
        encoded = encoder.encode(rows, output_positions=read_positions(config))
        features = head_features(config, encoded, rows["padding_mask"], use_pooler)
        logits = head(features)
        if window_aggregation is not None:
            logits = WindowAggregation(
                window_aggregation, initializer_range=config.initializer_range,
                dtype=encoder.dtype_policy, name="window_aggregation")(
                    logits, features, inputs["padding_mask"])
        super().__init__(encoder, inputs, logits, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.window_aggregation = window_aggregation
        self.head = head
        self.compile()

    def default_compile_args(self):
        if self.num_classes == 1:
            return {"loss": keras.losses.MeanSquaredError(),
                    "metrics": [keras.metrics.MeanAbsoluteError()]}
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}

    def get_config(self):
        config = {**super().get_config(), "num_classes": self.num_classes,
                  "dropout": self.dropout}
        if self.window_aggregation is not None:  # other models keep the config they had
            config["window_aggregation"] = self.window_aggregation
        return config
