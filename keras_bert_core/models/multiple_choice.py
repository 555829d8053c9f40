"""`BertMultipleChoice`: picks one of several candidate continuations (SWAG, RACE)."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_core.models.encoder import INPUT_NAMES
from keras_bert_core.models.sequence_head import head_features, read_positions, sequence_head
from keras_bert_core.models.task import TaskModel
from keras_bert_core.models.text_inputs import shape_of


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertMultipleChoice(TaskModel):
    """Scores each (context, choice) pair from its pooled output; softmax across choices.

    An encoder without a pooler (DistilBERT) scores the first token's output through the
    family's classification head (`BertConfig.classifier_activation`), as Hugging Face's
    multiple-choice models do.

    Every choice is packed with the context into its own row; the encoder sees the
    `batch * num_choices` rows at once. The default loss is the sparse categorical
    cross-entropy over the choices, the metric `accuracy`, the optimizer `BertAdamW(5e-5)`.

    Args:
        encoder: a `BertEncoder`.
        num_choices: number of candidates per example.
        dropout: dropout rate on the pooled output.
        preprocessor: None, or the layer that turns text into the inputs (e.g.
            `kbc.BertPreprocessor`); `fit`, `evaluate` and `predict` then take text too
            (see `TaskModel`).
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask`
    `[batch, num_choices, seq]`; with a preprocessor also text `(contexts, choices)`:
    contexts `[batch]` and choices `[batch, num_choices]` strings, each choice packed with
    its context as a pair.

    Outputs: float32 logits `[batch, num_choices]`. `fit` takes the index of the right
    choice, int `[batch]`.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertMultipleChoice(encoder, num_choices=2)
    >>> ids = np.array([[[2, 10, 3, 20, 3], [2, 10, 3, 21, 3]]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.array([[[0, 0, 0, 1, 1]] * 2], "int32"),
    ...      "padding_mask": np.ones_like(ids)}
    >>> history = model.fit(x, np.array([1]), verbose=0)
    >>> model.predict(x, verbose=0).shape
    (1, 2)
    """

    def __init__(self, encoder, num_choices, dropout=0.1, **kwargs):
        config = self._check_encoder(encoder).config
        if not isinstance(num_choices, int) or num_choices < 2:
            raise ValueError(f"num_choices must be an integer >= 2, got {num_choices!r}")
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        # One row per (choice, example), choice-major: [choices * batch, seq]. (A reshape
        # would bake the symbolic, unknown `seq` into the graph.)
        rows = {name: ops.concatenate(ops.unstack(tensor, axis=1), axis=0)
                for name, tensor in inputs.items()}
        encoded = encoder.encode(rows, output_positions=read_positions(config))
        head = sequence_head(config, 1, dropout, config.pooler, encoder.dtype_policy,
                             "choice_scorer")
        scores = head(head_features(config, encoded, rows["padding_mask"], config.pooler))
        logits = ops.transpose(ops.reshape(scores, (num_choices, -1)))
        super().__init__(encoder, inputs, logits, **kwargs)
        self.num_choices = num_choices
        self.dropout = dropout
        self.head = head
        self.compile()

    def _check_text(self, text):
        if not (isinstance(text, tuple) and len(text) == 2):
            raise ValueError(f"{type(self).__name__} takes text as a tuple (contexts, choices): "
                             f"contexts [batch] and choices [batch, {self.num_choices}] strings")
        contexts, choices = (shape_of(texts) for texts in text)
        if (contexts is None or len(contexts) != 1 or choices is None or len(choices) != 2
                or choices[1] not in (None, self.num_choices)):
            raise ValueError(f"{type(self).__name__} takes contexts [batch] and choices "
                             f"[batch, {self.num_choices}], got shapes {contexts} and "
                             f"{choices}")

    def preprocess_text(self, text, static_shape=None):
        """The inputs `[batch, num_choices, seq]` for text `(contexts, choices)`."""
        self._check_text(text)
        contexts, choices = (tf.convert_to_tensor(texts, tf.string) for texts in text)
        rows = super().preprocess_text(
            (tf.repeat(contexts, self.num_choices), tf.reshape(choices, [-1])), static_shape)
        # A static sequence length (fit) stays static through the reshape.
        return {name: tf.reshape(value, [-1, self.num_choices,
                                         value.shape[-1] or tf.shape(value)[-1]])
                for name, value in rows.items()}

    def default_compile_args(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}

    def get_config(self):
        return {**super().get_config(), "num_choices": self.num_choices, "dropout": self.dropout}
