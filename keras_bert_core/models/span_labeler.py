"""`BertSpanLabeler`: extractive question answering (SQuAD): an answer span per question."""

import keras

from keras_bert_core.layers.heads import SpanLabelingHead
from keras_bert_core.models.encoder import encoder_inputs
from keras_bert_core.models.task import TaskModel

# Targets may also be named for what they hold, as the SQuAD features name them.
_TARGET_ALIASES = {"start_positions": "start_logits", "end_positions": "end_logits"}


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertSpanLabeler(TaskModel):
    """Scores every token as the start and as the end of the answer span.

    Padding positions score a large negative number, so they are never chosen. The default
    loss is the mean of the start and end cross-entropies, with `start_logits_accuracy` and
    `end_logits_accuracy` as metrics; the optimizer is `BertAdamW(5e-5)`.

    Args:
        encoder: a `BertEncoder`.
        preprocessor: None, or the layer that turns text into the inputs (e.g.
            `kbc.BertPreprocessor`); `fit`, `evaluate` and `predict` then take text too
            (see `TaskModel`).
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]`; with
    a preprocessor also `(questions, contexts)` text pairs, whose logits index the tokens of
    `preprocessor((questions, contexts))` (`[n, seq_length]`; contexts longer than the
    room are cut: `tasks.question_answering` windows them and maps logits to answer text).

    Outputs: a dict of float32 `start_logits` and `end_logits` `[batch, seq]`. `fit` takes
    targets `{"start_positions": ..., "end_positions": ...}` (or keyed `start_logits` and
    `end_logits`), int token indices `[batch]`; index 0 (`[CLS]`) marks no answer.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertSpanLabeler(encoder)
    >>> ids = np.array([[2, 10, 3, 20, 21, 22, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.array([[0, 0, 0, 1, 1, 1, 1, 0]], "int32"),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> y = {"start_positions": np.array([4]), "end_positions": np.array([5])}
    >>> history = model.fit(x, y, verbose=0)
    >>> model.predict(x, verbose=0)["start_logits"].shape
    (1, 8)
    """

    trains_pooler = False
    outputs_per_token = True

    def __init__(self, encoder, **kwargs):
        config = self._check_encoder(encoder).config
        inputs = encoder_inputs()
        head = SpanLabelingHead(
            initializer_range=config.initializer_range, dtype=encoder.dtype_policy,
            name="span_labeling")
        outputs = head(encoder(inputs)["sequence_output"], inputs["padding_mask"])
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.head = head
        self.compile()

    def default_compile_args(self):
        cross_entropy = keras.losses.SparseCategoricalCrossentropy
        return {
            "loss": {"start_logits": cross_entropy(from_logits=True),
                     "end_logits": cross_entropy(from_logits=True)},
            "loss_weights": {"start_logits": 0.5, "end_logits": 0.5},
            "metrics": {
                "start_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "end_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
        }

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        if isinstance(y, dict):
            y = {_TARGET_ALIASES.get(name, name): value for name, value in y.items()}
        return super()._prepare_targets(x, y, y_pred, sample_weight)
