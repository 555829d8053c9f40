"""`BertTokenClassifier`: a label per token (named entities, chunks, parts of speech)."""

import keras
from keras import ops

from keras_bert_core.layers.heads import ClassificationHead
from keras_bert_core.models.encoder import encoder_inputs
from keras_bert_core.models.metrics import IGNORE_LABEL, MaskedSparseCategoricalAccuracy
from keras_bert_core.models.task import TaskModel


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertTokenClassifier(TaskModel):
    """Classifies every token from the encoder's sequence output.

    Labels equal to `IGNORE_LABEL` (-100) are left out of the loss and the accuracy: give
    it to the word pieces after the first of each word and to special tokens. Padding
    positions are left out whatever label they carry. The default loss is the sparse
    categorical cross-entropy averaged over the labeled tokens; the metric is `accuracy` over
    them; the optimizer is `BertAdamW(5e-5)`.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of token labels.
        dropout: dropout rate on the sequence output.
        preprocessor: None, or the layer that turns text into the inputs (e.g.
            `kbc.BertPreprocessor`); `fit`, `evaluate` and `predict` then take text too
            (see `TaskModel`).
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]`; with
    a preprocessor also texts, whose logits index the tokens of `preprocessor(texts)`
    (`[n, seq_length, num_classes]`; `tasks.token_classification` maps them to words).
    With a `kbc.LongTextPreprocessor` it tags each window's rows, and its task and exports
    tag long texts whole (each word from its most central window); text in is refused.

    Outputs: float32 logits `[batch, seq, num_classes]`. `fit` takes int labels
    `[batch, seq]`.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertTokenClassifier(encoder, num_classes=5)
    >>> ids = np.array([[2, 10, 11, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> labels = np.array([[-100, 1, -100, 0, -100, -100]])
    >>> history = model.fit(x, labels, verbose=0)
    >>> model.predict(x, verbose=0).shape
    (1, 6, 5)
    """

    trains_pooler = False
    outputs_per_token = True

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        config = self._check_encoder(encoder).config
        inputs = encoder_inputs()
        head = ClassificationHead(
            num_classes, dropout=dropout, initializer_range=config.initializer_range,
            dtype=encoder.dtype_policy, name="token_classifier")
        logits = head(encoder(inputs)["sequence_output"])
        super().__init__(encoder, inputs, logits, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.head = head
        self.compile()

    def _check_text(self, text):
        super()._check_text(text)
        if hasattr(self.preprocessor, "max_windows"):  # a `LongTextPreprocessor`
            raise ValueError(
                f"{type(self).__name__} {self.name!r} reads long texts as windows, whose "
                "tags join by position: answer them with its task "
                "(keras_bert_core.tasks.fine_tuning.task_of(model).predict) or its exports; "
                "predict takes the rows of its windows as token_ids, segment_ids, "
                "padding_mask")

    def default_compile_args(self):
        return {
            # Divided by the weight of the labeled tokens, not by batch * seq.
            "loss": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=IGNORE_LABEL,
                reduction="mean_with_sample_weight"),
            # Weighted, so that padding (weight 0) stays out of it.
            "metrics": [],
            "weighted_metrics": [MaskedSparseCategoricalAccuracy(IGNORE_LABEL, name="accuracy")],
        }

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        real = ops.cast(x["padding_mask"] > 0, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            if len(sample_weight.shape) == 1:  # per-example weights
                sample_weight = sample_weight[:, None]
            real = real * sample_weight
        return super()._prepare_targets(x, y, y_pred, real)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "dropout": self.dropout}
