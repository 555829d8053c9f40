"""The adapters in a `save_weights` backup, which Keras alone would lose (`StepBackup`)."""

import keras

from keras_bert_core.errors import CheckpointError
from keras_bert_core.models.lora.projections import (
    adapted_projections,
    base_kernel,
    encoder_of,
    has_lora,
    named,
)

# The group of a Keras weights file that `add_lora_state` writes.
STATE_GROUP = "keras_bert_core_lora_state"


def state_variables(model):
    """`{path: variable}` of what `save_weights` loses: each adapted kernel, A and B."""
    return named([variable for _, layer, _ in adapted_projections(encoder_of(model))
                   for variable in (base_kernel(layer), layer.lora_kernel_a,
                                    layer.lora_kernel_b)])


def add_lora_state(model, weights_file):
    """Adds the adapters and the kernels under them to a `model.save_weights` file.

    Keras writes an adapted layer's merged kernel `W + alpha / rank * A B` and neither `W`
    nor A and B; `load_weights` puts the merged kernel in `W` and zeros A and B. The outputs
    are the same, but A = B = 0 gives both zero gradients, so training would go on without
    the adapters. This writes `W`, A and B into the file's own group, which `load_weights`
    passes over and `restore_lora_state` reads back. A model without adapters: no change.

    Args:
        model: the model `save_weights` wrote.
        weights_file: the `.weights.h5` file it wrote.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> _ = kbc.enable_lora(encoder, rank=2)
    >>> b = encoder.blocks[0].attention.query.lora_kernel_b
    >>> _ = b.assign(b + 1.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "state.weights.h5")
    >>> encoder.save_weights(path)
    >>> add_lora_state(encoder, path)
    >>> encoder.load_weights(path)
    >>> float(b.numpy().min())  # zeroed by Keras
    0.0
    >>> restore_lora_state(encoder, path)
    >>> float(b.numpy().min())
    1.0
    """
    import h5py

    variables = state_variables(model) if has_lora(model) else {}
    if not variables:
        return
    with h5py.File(weights_file, "a") as f:
        group = f.require_group(STATE_GROUP)
        for path, variable in variables.items():
            group.create_dataset(path, data=keras.ops.convert_to_numpy(variable))


def restore_lora_state(model, weights_file):
    """Puts back what `add_lora_state` wrote, after `model.load_weights(weights_file)`.

    A model without adapters: no change. A file without that state, or whose state does not
    fit the model's adapters, raises `CheckpointError` (naming the file).

    Args:
        model: the model the file was loaded into.
        weights_file: a `save_weights` file completed by `add_lora_state`.
    """
    import h5py

    variables = state_variables(model) if has_lora(model) else {}
    if not variables:
        return
    with h5py.File(weights_file, "r") as f:
        group = f.get(STATE_GROUP)
        if group is None:
            raise CheckpointError(f"{weights_file}: holds no LoRA adapters (written by "
                                  "save_weights alone, which keeps merged kernels only)")
        for path, variable in variables.items():
            if path not in group or group[path].shape != tuple(variable.shape):
                found = group[path].shape if path in group else "none"
                raise CheckpointError(f"{weights_file}: LoRA state {path} is {found}, the "
                                      f"model's {tuple(variable.shape)}")
        for path, variable in variables.items():
            variable.assign(group[path][()])
