"""`BertPretrainer`: BERT's pretraining model, masked LM plus (optionally) next-sentence
prediction."""

import keras
import numpy as np

from keras_bert_core.layers.heads import ClassificationHead, MaskedLMHead
from keras_bert_core.models.encoder import encoder_inputs
from keras_bert_core.models.metrics import TopLogitAccuracy
from keras_bert_core.models.task import TaskModel


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertPretrainer(TaskModel):
    """The encoder with BERT's masked-LM and next-sentence heads, or the masked-LM head alone.

    The masked-LM head runs only at `masked_positions` and its decoder is the encoder's word
    table (tied). The default loss is the masked-LM cross-entropy averaged over the real
    predictions (weighted by `masked_weights`, divided by their sum, as BERT does) plus the
    next-sentence cross-entropy; the metrics are `mlm_accuracy` (weighted) and `nsp_accuracy`.
    The default optimizer is `BertAdamW(1e-4)`. With `next_sentence=False` (masked LM only,
    as RoBERTa trains) there is no next-sentence head, loss or metric, and the pooler, which
    only that head reads, is not trained.

    Args:
        encoder: a `BertEncoder`.
        next_sentence: include the next-sentence head.
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]` and
    `masked_positions` `[batch, predictions]`.

    Outputs: a dict of float32 logits, `mlm` `[batch, predictions, vocab]` and, with the
    next-sentence head, `nsp` `[batch, 2]` (0: B follows A, 1: B is random, BERT's
    convention). The same head learns ALBERT's sentence-order prediction from
    sentence-order data (0: A then B as written, 1: swapped).

    `fit` takes `(inputs, targets, sample_weights)` batches with
    `targets = {"mlm": masked_ids, "nsp": next_sentence_labels}` and
    `sample_weights = {"mlm": masked_weights, "nsp": ones}` (`masked_weights` is 0.0 at
    unused prediction slots), as `pretraining.data` makes them. A `tf.data` dataset
    may leave `"nsp"` out of the weights, or give no weights (every slot then counts);
    targets and weights for an output the model does not have are ignored.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertPretrainer(encoder)
    >>> ids = np.array([[2, 10, 4, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32"),
    ...      "masked_positions": np.array([[2, 0]], "int32")}
    >>> y = {"mlm": np.array([[11, 0]], "int32"), "nsp": np.array([0], "int32")}
    >>> w = {"mlm": np.array([[1.0, 0.0]], "float32"), "nsp": np.ones(1, "float32")}
    >>> history = model.fit(x, y, sample_weight=w, verbose=0)
    >>> out = model.predict(x, verbose=0)
    >>> out["mlm"].shape, out["nsp"].shape
    ((1, 2, 100), (1, 2))
    >>> mlm_only = kbc.BertPretrainer(encoder, next_sentence=False)
    >>> sorted(mlm_only.predict(x, verbose=0))
    ['mlm']
    """

    default_learning_rate = 1e-4

    def __init__(self, encoder, next_sentence=True, **kwargs):
        config = self._check_encoder(encoder).config
        if next_sentence and not config.pooler:
            raise ValueError("next_sentence=True needs an encoder with a pooler (the "
                             "sentence head reads pooled_output); this configuration has "
                             "none: use next_sentence=False")
        inputs = {**encoder_inputs(), "masked_positions": keras.Input(
            shape=(None,), dtype="int32", name="masked_positions")}
        # The last block computes only the masked positions (for the masked-LM head) and
        # [CLS] first (for the next-sentence head).
        masked_positions = inputs["masked_positions"]
        output_positions = masked_positions
        if next_sentence:
            output_positions = keras.ops.concatenate(
                [keras.ops.zeros_like(masked_positions[:, :1]), masked_positions], axis=1)
        encoded = encoder.encode(inputs, output_positions=output_positions)
        masked_lm = MaskedLMHead(
            encoder.embeddings, activation=config.hidden_act,
            layer_norm_eps=config.layer_norm_eps, initializer_range=config.initializer_range,
            use_bias=config.use_bias, dtype=encoder.dtype_policy, name="masked_lm")
        if next_sentence:
            next_sentence_head = ClassificationHead(
                2, initializer_range=config.initializer_range, dtype=encoder.dtype_policy,
                name="next_sentence")
            outputs = {"mlm": masked_lm(encoded["sequence_output"][:, 1:]),
                       "nsp": next_sentence_head(encoded["pooled_output"])}
        else:
            next_sentence_head = None
            outputs = {"mlm": masked_lm(encoded["sequence_output"])}
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence_head
        self.trains_pooler = bool(next_sentence)
        self.compile()

    def default_compile_args(self):
        mlm_loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")
        if self.next_sentence is None:
            # One output: Keras does not prefix metric names with the output's then.
            return {"loss": {"mlm": mlm_loss}, "metrics": {},
                    "weighted_metrics": {"mlm": [TopLogitAccuracy(name="mlm_accuracy")]}}
        return {
            "loss": {"mlm": mlm_loss,
                     "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
            # Keras prefixes metric names with the output's: `mlm_accuracy`, `nsp_accuracy`.
            "metrics": {"nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
            "weighted_metrics": {"mlm": [TopLogitAccuracy(name="accuracy")]},
        }

    def _head_variables(self):
        transform = self.masked_lm.transform
        layer_norm = self.masked_lm.layer_norm
        variables = {
            "mlm/transform/kernel": transform.kernel,
            "mlm/transform/bias": transform.bias,
            "mlm/layer_norm/gamma": layer_norm.gamma,
            "mlm/layer_norm/beta": layer_norm.beta,
            "mlm/output_bias": self.masked_lm.output_bias,
        }
        # A bias-free head (ModernBERT's) has no transform bias and no LayerNorm beta.
        variables = {name: v for name, v in variables.items() if v is not None}
        if self.next_sentence is not None:
            variables["nsp/kernel"] = self.next_sentence.dense.kernel
            variables["nsp/bias"] = self.next_sentence.dense.bias
        return variables

    def get_head_weights(self):
        """The heads' weights as numpy arrays under the names `set_head_weights` takes."""
        return {name: keras.ops.convert_to_numpy(variable)
                for name, variable in self._head_variables().items()}

    def set_head_weights(self, weights, strict=True):
        """Loads pretrained head weights (the encoder's come with the encoder).

        Args:
            weights: dict of arrays named `mlm/transform/kernel` `[hidden, embedding]`,
                `mlm/transform/bias`, `mlm/layer_norm/gamma`, `mlm/layer_norm/beta`
                `[embedding]`, `mlm/output_bias` `[vocab]` and, with the next-sentence
                head, `nsp/kernel` `[hidden, 2]`, `nsp/bias` `[2]`.
            strict: require every name; with `False` the missing ones keep their values
                (a checkpoint without the next-sentence head, say).

        Raises:
            ValueError: naming every missing, unexpected and mis-shaped weight; nothing is
                assigned then.
        """
        variables = self._head_variables()
        problems = [f"unexpected weight {name!r}" for name in weights if name not in variables]
        if strict:
            problems += [f"missing weight {name!r}" for name in variables if name not in weights]
        arrays = {}
        for name, value in weights.items():
            if name not in variables:
                continue
            arrays[name] = np.asarray(value)
            expected = tuple(variables[name].shape)
            if arrays[name].shape != expected:
                problems.append(f"weight {name!r} has shape {arrays[name].shape}, "
                                f"the model expects {expected}")
        if problems:
            raise ValueError("Cannot load the pretrainer's head weights: " + "; ".join(problems))
        for name, value in arrays.items():
            variables[name].assign(value.astype(variables[name].dtype))

    def get_config(self):
        return {**super().get_config(), "next_sentence": self.next_sentence is not None}
