"""`LoraSummary`: what `enable_lora` adapted, and how many parameters train."""

import dataclasses

from keras_bert_core.models.lora.projections import (
    PROJECTIONS,
    adapted_projections,
    encoder_of,
    kept_trainable,
    parameter_count,
)


@dataclasses.dataclass(frozen=True)
class LoraSummary:
    """What `enable_lora` adapted, and how many parameters train.

    Attributes:
        rank: the adapters' rank.
        alpha: their scale numerator (the update is `alpha / rank * A B`).
        targets: the projection names adapted (keys of `PROJECTIONS`).
        also_train: the encoder weights kept trainable besides the adapters.
        layers: the adapted layers, one per distinct projection (shared ALBERT blocks once).
        adapter_params: parameters in the adapters' A and B matrices.
        trainable_params: parameters that train (adapters, head, `also_train`).
        total_params: every parameter of the model, adapters included.

    `str()` gives a two-line report.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> summary = kbc.enable_lora(encoder, rank=4)
    >>> summary.adapter_params == 2 * 2 * (2 * 4 * 128)  # 2 blocks x (query, value)
    True
    >>> print(summary)  # doctest: +ELLIPSIS
    LoRA rank 4 (alpha 4) on query, value: 4 layers, 4,096 adapter parameters
    trainable: 4,096 of ... parameters (...%)
    """

    rank: int
    alpha: float
    targets: tuple
    also_train: tuple
    layers: tuple
    adapter_params: int
    trainable_params: int
    total_params: int

    def __str__(self):
        alpha = f"{self.alpha:g}"
        share = 100 * self.trainable_params / max(self.total_params, 1)
        return (f"LoRA rank {self.rank} (alpha {alpha}) on {', '.join(self.targets)}: "
                f"{len(self.layers)} layers, {self.adapter_params:,} adapter parameters\n"
                f"trainable: {self.trainable_params:,} of {self.total_params:,} parameters "
                f"({share:.2f}%)")


def lora_summary(model):
    """The `LoraSummary` of a model on which `enable_lora` (or `load_lora_weights`) ran.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> _ = kbc.enable_lora(encoder, rank=2, targets="attention")
    >>> lora_summary(encoder).targets
    ('query', 'key', 'value', 'attention_output')
    """
    encoder = encoder_of(model)
    adapted = adapted_projections(encoder)
    if not adapted:
        raise ValueError(f"{model.name} has no LoRA adapters: call enable_lora first")
    first = adapted[0][1]
    targets = tuple(target for target in PROJECTIONS
                    if any(t == target for _, _, t in adapted))
    return LoraSummary(
        rank=int(first.lora_rank), alpha=float(first.lora_alpha), targets=targets,
        also_train=kept_trainable(encoder), layers=tuple(name for name, _, _ in adapted),
        adapter_params=parameter_count([v for _, layer, _ in adapted
                                        for v in (layer.lora_kernel_a, layer.lora_kernel_b)]),
        trainable_params=parameter_count(model.trainable_weights),
        total_params=parameter_count(model.weights))
