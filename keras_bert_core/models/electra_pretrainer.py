"""`ElectraPretrainer`: replaced-token detection (ELECTRA), a small generator's masked-LM
samples corrupting the text its discriminator reads."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_core.config import BertConfig
from keras_bert_core.layers.embeddings import SharedEmbeddings
from keras_bert_core.layers.heads import ClassificationHead, MaskedLMHead
from keras_bert_core.layers.replaced_tokens import ReplacedTokenSampler
from keras_bert_core.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert_core.models.metrics import TopLogitAccuracy
from keras_bert_core.models.task import TaskModel
from keras_bert_core.models.text_inputs import arguments_by_name


def generator_config(config, size):
    """The generator's `BertConfig`: the discriminator's depth, `size` times its width,
    heads (at least one) and feed-forward width, reading its tables (ELECTRA: 1/4 to 1/3).

    >>> cfg = generator_config(BertConfig.preset("electra_base"), 0.25)
    >>> cfg.hidden_size, cfg.num_heads, cfg.intermediate_size, cfg.embedding_size
    (192, 3, 768, 768)
    """
    if not 0.0 < size <= 1.0:
        raise ValueError(f"generator size must be in (0, 1], got {size!r}")
    heads = max(1, round(config.num_heads * size))
    hidden = max(heads, round(config.hidden_size * size / heads) * heads)
    tables = config.embedding_size or config.hidden_size
    return BertConfig.from_dict({
        **config.to_dict(), "hidden_size": hidden, "num_heads": heads,
        "intermediate_size": max(1, round(config.intermediate_size * size)),
        "embedding_size": None if tables == hidden else tables, "pooler": False,
        "classifier_activation": config.classifier_activation or "gelu"})


def _with_targets_as_inputs(x, y=None, sample_weight=None):
    """`(x, y[, sample_weight])` with `x` also holding `masked_ids` and `masked_weights` (all
    ones without weights), read from `y["mlm"]` and `sample_weight["mlm"]`."""
    if isinstance(x, dict) and isinstance(y, dict) and "mlm" in y and "masked_ids" not in x:
        weights = (sample_weight or {}).get("mlm")
        if weights is None:
            weights = ops.ones_like(y["mlm"], dtype="float32")
        x = {**x, "masked_ids": y["mlm"], "masked_weights": weights}
    return (x, y) if sample_weight is None else (x, y, sample_weight)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class ElectraPretrainer(TaskModel):
    """ELECTRA's pretraining model: a generator learns masked LM; its samples replace the
    masked tokens; the discriminator (`encoder`) learns which tokens were replaced.

    The generator is a `BertEncoder` `generator_size` times as wide as the discriminator
    (`generator_config`), embedding with the discriminator's word, position and segment
    tables and their LayerNorm (`SharedEmbeddings`), with its own projection; its masked-LM
    head decodes with the shared word table. Samples (`ReplacedTokenSampler`) pass no
    gradient. The loss is the generator's masked-LM cross-entropy (over the real
    predictions, as `BertPretrainer`'s) plus `rtd_weight` times the discriminator's sigmoid
    cross-entropy averaged over the real tokens; the metrics are `mlm_accuracy` and
    `rtd_accuracy`. Fine-tune the discriminator: it is `encoder` (what `find_model`,
    `load_checkpoint` and `kbc finetune --checkpoint` read from a saved pretrainer).

    Args:
        encoder: the discriminator, a `BertEncoder`.
        generator_size: the generator's width, heads and feed-forward as a fraction of the
            discriminator's.
        rtd_weight: the weight of the discriminator's loss (ELECTRA: 50).
        seed: the seed of the generator's sampling.
        **kwargs: `name`, `trainable`.

    Inputs: `BertPretrainer`'s (`token_ids` with the masks applied, `segment_ids`,
    `padding_mask`, `masked_positions`) and `masked_ids`, `masked_weights` `[batch,
    predictions]`, the original tokens and weights; `fit` takes `BertPretrainer`'s data and
    copies its targets and weights into the inputs.

    Outputs: `mlm` float32 logits `[batch, predictions, vocab]` (the generator's), `rtd`
    float32 logits `[batch, seq, 1]` (the discriminator's: > 0 says replaced) and
    `replaced` int32 `[batch, seq, 1]` (which tokens the samples replaced).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("electra_small", vocab_size=100, num_layers=1,
    ...                                hidden_size=32, num_heads=4, intermediate_size=64,
    ...                                embedding_size=16)
    >>> model = kbc.ElectraPretrainer(kbc.BertEncoder(config), generator_size=0.25)
    >>> model.generator.config.hidden_size, model.generator.config.num_heads
    (8, 1)
    >>> ids = np.array([[2, 10, 4, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32"),
    ...      "masked_positions": np.array([[2, 0]], "int32"),
    ...      "masked_ids": np.array([[11, 0]], "int32"),
    ...      "masked_weights": np.array([[1.0, 0.0]], "float32")}
    >>> out = model(x)
    >>> tuple(out["mlm"].shape), tuple(out["rtd"].shape), tuple(out["replaced"].shape)
    ((1, 2, 100), (1, 6, 1), (1, 6, 1))

    `model.fit(x, {"mlm": masked_ids}, sample_weight={"mlm": masked_weights})` trains it
    (on `BertPretrainer`'s data, without `masked_ids` and `masked_weights` in `x`); its
    history holds `loss`, `mlm_loss`, `rtd_loss`, `mlm_accuracy` and `rtd_accuracy`.
    """

    default_learning_rate = 1e-4
    trains_pooler = False

    def __init__(self, encoder, generator_size=0.25, rtd_weight=50.0, seed=None, **kwargs):
        config = self._check_encoder(encoder).config
        inputs = {**encoder_inputs(), "masked_positions": keras.Input(
            shape=(None,), dtype="int32", name="masked_positions"),
            "masked_ids": keras.Input(shape=(None,), dtype="int32", name="masked_ids"),
            "masked_weights": keras.Input(shape=(None,), dtype="float32",
                                          name="masked_weights")}
        small = generator_config(config, generator_size)
        generator = BertEncoder(small, dtype=encoder.dtype_policy, name="generator",
                                embeddings=SharedEmbeddings(
                                    encoder.embeddings, small.hidden_size,
                                    initializer_range=small.initializer_range,
                                    dtype=encoder.dtype_policy, name="generator_embeddings"))
        # Nested whole (its layers' names are the discriminator's too).
        generated = generator({name: inputs[name] for name in INPUT_NAMES})
        masked_lm = MaskedLMHead(
            generator.embeddings, activation=small.hidden_act,
            layer_norm_eps=small.layer_norm_eps, initializer_range=small.initializer_range,
            dtype=encoder.dtype_policy, name="generator_lm")
        mlm_logits = masked_lm(generated["sequence_output"], inputs["masked_positions"])
        sampler = ReplacedTokenSampler(seed=seed, name="sampler")
        corrupted, replaced = sampler(mlm_logits, inputs["token_ids"],
                                      inputs["masked_positions"], inputs["masked_ids"],
                                      inputs["masked_weights"])
        encoded = encoder.encode({**inputs, "token_ids": corrupted})
        # Hugging Face's `discriminator_predictions`: dense -> activation -> one logit.
        detector = ClassificationHead(
            1, dropout=0.0, hidden_activation=config.hidden_act,
            initializer_range=config.initializer_range, dtype=encoder.dtype_policy,
            name="discriminator_head")
        outputs = {"mlm": mlm_logits, "rtd": detector(encoded["sequence_output"]),
                   "replaced": ops.expand_dims(replaced, -1)}
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.generator = generator
        self.masked_lm = masked_lm
        self.sampler = sampler
        self.discriminator_head = detector
        self.generator_size = generator_size
        self.rtd_weight = rtd_weight
        self.seed = seed
        self.compile()

    def default_compile_args(self):
        return {
            "loss": {"mlm": keras.losses.SparseCategoricalCrossentropy(
                         from_logits=True, reduction="mean_with_sample_weight"),
                     "rtd": keras.losses.BinaryCrossentropy(
                         from_logits=True, reduction="mean_with_sample_weight")},
            "loss_weights": {"mlm": 1.0, "rtd": self.rtd_weight},
            "metrics": {},
            "weighted_metrics": {"mlm": [TopLogitAccuracy(name="accuracy")],
                                 "rtd": [keras.metrics.BinaryAccuracy(name="accuracy",
                                                                      threshold=0.0)]},
        }

    def fit(self, *args, **kwargs):
        arguments = arguments_by_name(keras.Model.fit, self, args, kwargs)
        self._targets_as_inputs(arguments)
        validation = arguments.get("validation_data")
        if isinstance(validation, tf.data.Dataset):
            arguments["validation_data"] = validation.map(_with_targets_as_inputs)
        elif isinstance(validation, (tuple, list)):
            arguments["validation_data"] = _with_targets_as_inputs(*validation)
        return super().fit(**arguments)

    def evaluate(self, *args, **kwargs):
        arguments = arguments_by_name(keras.Model.evaluate, self, args, kwargs)
        self._targets_as_inputs(arguments)
        return super().evaluate(**arguments)

    @staticmethod
    def _targets_as_inputs(arguments):
        """The masked-LM targets and weights also go in (the sampler compares with them),
        in the data itself: Keras builds a distributed model from its batches."""
        x = arguments.get("x")
        if isinstance(x, tf.data.Dataset):
            arguments["x"] = x.map(_with_targets_as_inputs)
        elif isinstance(x, dict):
            arguments["x"] = _with_targets_as_inputs(
                x, arguments.get("y"), arguments.get("sample_weight"))[0]

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        # The discriminator's targets are made in the model (which tokens the samples
        # replaced); its weights are the real tokens.
        if not isinstance(y_pred, dict):
            return y, sample_weight
        real = ops.cast(ops.expand_dims(x["padding_mask"] > 0, -1), "float32")
        targets = {"mlm": y["mlm"], "rtd": ops.cast(y_pred["replaced"], "float32"),
                   "replaced": y_pred["replaced"]}
        weights = {"mlm": (sample_weight or {}).get("mlm"), "rtd": real, "replaced": None}
        return targets, weights

    def get_config(self):
        return {**super().get_config(), "generator_size": self.generator_size,
                "rtd_weight": self.rtd_weight, "seed": self.seed}
