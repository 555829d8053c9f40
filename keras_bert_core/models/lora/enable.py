"""`enable_lora`: adds low-rank adapters to the encoder's projections, freezes the rest."""

import numpy as np

from keras_bert_core.models.lora.projections import (
    ALSO_TRAIN,
    adapted_projections,
    also_trainable,
    encoder_of,
    projections,
    target_names,
    unique,
)
from keras_bert_core.models.lora.summary import lora_summary


def enable_lora(model, rank, targets=("query", "value"), alpha=None, also_train=()):
    """Adds rank-`rank` adapters to the encoder's projections and freezes the rest of it.

    Each adapted `Dense` computes `x (W + alpha / rank * A B) + b` with `W` frozen (Keras's
    `Dense.enable_lora`). Afterwards the model trains only the adapters, the task head (every
    weight outside the encoder) and the encoder weights named in `also_train`. Blocks shared
    across layers (ALBERT's `num_layer_groups`) get one adapter each, trained by every layer
    that uses them. A new adapter leaves the outputs unchanged (B starts at zero).

    Call it on a model with its pretrained weights loaded, before `fit`. A model already
    trained with its optimizer is compiled again (same arguments, fresh optimizer state), as
    the trainable weights change. LoRA usually wants a larger learning rate than full
    fine-tuning (in the LoRA paper, 2e-4 to 5e-4 for RoBERTa), e.g.
    `model.compile(optimizer=kbc.BertAdamW(5e-4))`.

    Args:
        model: a keras_bert_core task model (`BertClassifier`, `BertSpanLabeler`,
            `BertTokenClassifier`, `BertMultipleChoice`, `BertPretrainer`) or a `BertEncoder`.
        rank: the adapters' rank (a positive int).
        targets: projections of every block to adapt: `"query"`, `"key"`, `"value"`,
            `"attention_output"` (attention), `"intermediate"`, `"output"` (feed-forward),
            or the groups `"attention"`, `"feed_forward"`, `"all"`.
        alpha: scale numerator; `None` means `rank` (a scale of 1, Keras's default).
        also_train: encoder weights kept trainable too: any of `"bias"` (every dense
            layer's bias, BitFit-style), `"layer_norm"` (every LayerNorm's gamma and beta),
            `"pooler"`.

    Returns a `LoraSummary` (`print` it for trainable vs total parameters).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertClassifier(encoder, num_classes=2)
    >>> summary = kbc.enable_lora(model, rank=4, targets=("query", "value"))
    >>> summary.trainable_params == summary.adapter_params + 128 * 2 + 2  # + the head
    True
    >>> for w in model.trainable_weights:
    ...     print(w.path)
    block_0/attention/query/lora_kernel_a
    block_0/attention/query/lora_kernel_b
    block_0/attention/value/lora_kernel_a
    block_0/attention/value/lora_kernel_b
    block_1/attention/query/lora_kernel_a
    block_1/attention/query/lora_kernel_b
    block_1/attention/value/lora_kernel_a
    block_1/attention/value/lora_kernel_b
    classifier/dense/kernel
    classifier/dense/bias
    >>> ids = np.array([[2, 10, 11, 3], [2, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> history = model.fit(x, np.array([1, 0]), verbose=0)
    """
    encoder = encoder_of(model)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"rank must be a positive int, got {rank!r}")
    targets = target_names(targets)
    also_train = (also_train,) if isinstance(also_train, str) else tuple(also_train)
    unknown = [name for name in also_train if name not in ALSO_TRAIN]
    if unknown:
        raise ValueError(f"unknown also_train {unknown}: choose from {list(ALSO_TRAIN)}")
    already = [name for name, _, _ in adapted_projections(encoder)]
    if already:
        raise ValueError(f"LoRA is already enabled on {', '.join(already)}; enable it once "
                         f"per model (merge_lora gives a plain model to start again)")
    if not encoder.built:
        raise ValueError("build the encoder before enabling LoRA")
    for name, layer, _ in projections(encoder, targets):
        if rank > min(layer.kernel.shape):
            # A @ B of a kernel [n, m] has rank min(n, m) at most: more adds only parameters.
            raise ValueError(f"rank {rank} is larger than {name}'s kernel "
                             f"({' x '.join(map(str, layer.kernel.shape))}): choose a rank "
                             f"of at most {min(layer.kernel.shape)}")
    adapters = []
    for _, layer, _ in projections(encoder, targets):
        layer.enable_lora(int(rank), lora_alpha=alpha)
        adapters += [layer.lora_kernel_a, layer.lora_kernel_b]
    keep = {id(v) for v in [*adapters, *also_trainable(encoder, also_train)]}
    for variable in unique(encoder.weights):
        variable.trainable = id(variable) in keep
    _compile_again_if_trained(model)
    return lora_summary(model)


def _compile_again_if_trained(model):
    """An optimizer built for the old trainable weights, or a traced train step, does not fit
    the new ones: compile again with the same arguments."""
    optimizer = getattr(model, "optimizer", None)
    trained = ((optimizer is not None and optimizer.built)
               or getattr(model, "train_function", None) is not None)
    if getattr(model, "compiled", False) and trained:
        model.compile_from_config(model.get_compile_config())
