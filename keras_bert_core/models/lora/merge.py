"""`merge_lora`: a plain model whose kernels hold the adapters' update."""

import keras
import numpy as np

from keras_bert_core.models.lora.projections import (
    adapted_projections,
    base_kernel,
    encoder_of,
    named,
)


def merge_lora(model):
    """A plain copy of `model` whose kernels include the adapters: `W + alpha / rank * A B`.

    The copy has the same class and config, no LoRA variables, every weight trainable and
    the task's default compile settings; its outputs equal the LoRA model's to float
    rounding. It is what `export_saved_model`, `export_tflite` and `.keras` files take (the
    merge is computed in float64 and stored in the kernel's dtype). `model` is unchanged.

    Args:
        model: a task model or `BertEncoder` on which `enable_lora` ran.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> model = kbc.BertClassifier(
    ...     kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100)), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> merged = kbc.merge_lora(model)
    >>> any("lora" in w.path for w in merged.weights), len(merged.trainable_weights)
    (False, 41)
    >>> ids = np.array([[2, 10, 11, 3]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": np.ones_like(ids)}
    >>> np.allclose(merged.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-5)
    True
    """
    adapted = adapted_projections(encoder_of(model))
    if not adapted:
        raise ValueError(f"{model.name} has no LoRA adapters to merge")
    kernels = {}
    for _, layer, _ in adapted:
        kernel, a, b = (np.asarray(keras.ops.convert_to_numpy(v), "float64")
                        for v in (base_kernel(layer), layer.lora_kernel_a, layer.lora_kernel_b))
        kernels[base_kernel(layer).path] = kernel + (layer.lora_alpha / layer.lora_rank) * (a @ b)
    merged = type(model).from_config(model.get_config())
    source = named(model.weights)
    target = named(merged.weights)
    lora = {path for path in source if path.rsplit("/", 1)[-1].startswith("lora_kernel_")}
    if set(target) != set(source) - lora:
        raise RuntimeError(
            f"the rebuilt {type(model).__name__} does not have the LoRA model's weights: "
            f"missing {sorted(set(source) - lora - set(target))}, "
            f"extra {sorted(set(target) - set(source))}")
    for path, variable in target.items():
        value = kernels[path] if path in kernels else keras.ops.convert_to_numpy(source[path])
        variable.assign(np.asarray(value).astype(variable.dtype))
    return merged
