"""Adapter files: `save_lora_weights` writes what a LoRA fine-tune trained,
`load_lora_weights` reads it into a fresh model."""

import json

import keras

from keras_bert_core.errors import CheckpointError, CheckpointMismatchError
from keras_bert_core.models.lora.enable import enable_lora
from keras_bert_core.models.lora.projections import (
    adapted_projections,
    also_trainable,
    base_kernel,
    encoder_of,
    named,
    projections,
    target_names,
)
from keras_bert_core.models.lora.summary import lora_summary

FILE_FORMAT = "keras_bert_core.lora"
FILE_VERSION = 1


def save_lora_weights(model, filepath):
    """Writes what a LoRA fine-tune trained, and nothing else, to an HDF5 file.

    The file holds every trainable weight of `model` by path: the adapters' A and B
    matrices, the task head, and the encoder weights kept trainable by `also_train`; and, as
    attributes, the rank, alpha, targets and `also_train`, so `load_lora_weights` can enable
    the same adapters on a fresh model. The frozen weights are not in it: load them from the
    checkpoint the fine-tune started from. `.lora.h5` is the usual suffix.

    Args:
        model: a model on which `enable_lora` ran.
        filepath: the file to write.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> model = kbc.BertClassifier(
    ...     kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100)), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> path = os.path.join(tempfile.mkdtemp(), "adapters.lora.h5")
    >>> kbc.save_lora_weights(model, path)
    >>> os.path.getsize(path) < 64 * 1024  # the whole model: about 1 MB
    True
    """
    import h5py

    summary = lora_summary(model)
    weights = named(model.trainable_weights)
    with h5py.File(filepath, "w") as f:
        f.attrs.update({
            "format": FILE_FORMAT, "version": FILE_VERSION, "rank": summary.rank,
            "alpha": summary.alpha, "targets": json.dumps(summary.targets),
            "also_train": json.dumps(summary.also_train), "model": type(model).__name__})
        for path, variable in weights.items():
            f.create_dataset(path, data=keras.ops.convert_to_numpy(variable))


def _read(filepath):
    import h5py

    try:
        f = h5py.File(filepath, "r")
    except OSError as error:
        raise CheckpointError(f"{filepath}: cannot read LoRA weights ({error})") from None
    with f:
        if f.attrs.get("format") != FILE_FORMAT:
            raise CheckpointError(f"{filepath}: not a LoRA weights file (save_lora_weights "
                                  f"writes them)")
        arrays = {}
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
        settings = {"rank": int(f.attrs["rank"]), "alpha": float(f.attrs["alpha"]),
                    "targets": tuple(json.loads(f.attrs["targets"])),
                    "also_train": tuple(json.loads(f.attrs["also_train"]))}
    return settings, arrays


def _expected(model, settings):
    """`({path: shape} of the weights a file may hold, the paths it must hold)` for loading
    `settings`' adapters into `model`, before they are enabled on it (a file that does not
    fit then leaves the model as it was)."""
    encoder = encoder_of(model)
    shapes = {path: tuple(v.shape) for path, v in named(model.weights).items()}
    if adapted_projections(encoder):
        return shapes, set(named(model.trainable_weights))
    required = set()
    for _, layer, _ in projections(encoder, target_names(settings["targets"])):
        kernel = base_kernel(layer)
        prefix = kernel.path.rsplit("/", 1)[0]
        (width_in, width_out), rank = kernel.shape, settings["rank"]
        shapes[f"{prefix}/lora_kernel_a"] = (width_in, rank)
        shapes[f"{prefix}/lora_kernel_b"] = (rank, width_out)
        required |= {f"{prefix}/lora_kernel_a", f"{prefix}/lora_kernel_b"}
    trainable = named(model.trainable_weights)
    in_encoder = {id(v) for v in encoder.weights}
    kept = {id(v) for v in also_trainable(encoder, settings["also_train"])}
    required |= {path for path, v in trainable.items()
                 if id(v) not in in_encoder or id(v) in kept}
    return shapes, required


def load_lora_weights(model, filepath):
    """Loads a `save_lora_weights` file into `model`, enabling its adapters first if needed.

    On a model without adapters (a fresh one holding the base checkpoint's weights) this runs
    `enable_lora` with the file's rank, alpha, targets and `also_train`, then assigns every
    weight in the file. A file that does not fit raises `CheckpointMismatchError` before
    anything changes; it names every weight that trains in the model and is not in the file,
    every one in the file that the model lacks, and every mis-shaped one with both shapes
    (another rank, width or head size).

    Args:
        model: a task model or `BertEncoder` of the configuration the adapters were
            trained on.
        filepath: a file written by `save_lora_weights`.

    Returns the model's `LoraSummary`.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
    >>> model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> path = os.path.join(tempfile.mkdtemp(), "adapters.lora.h5")
    >>> kbc.save_lora_weights(model, path)
    >>> # In practice `fresh` holds the base checkpoint's weights (kbc.load_checkpoint).
    >>> fresh = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> kbc.load_lora_weights(fresh, path).rank
    4
    >>> other = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=3)
    >>> kbc.load_lora_weights(other, path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    keras_bert_core.errors.CheckpointMismatchError: ...
      mis-shaped (2):
        classifier/dense/bias: file (2,), model (3,)
        classifier/dense/kernel: file (128, 2), model (128, 3)
    """
    settings, arrays = _read(filepath)
    shapes, required = _expected(model, settings)
    missing = sorted(required - set(arrays))
    unexpected = sorted(set(arrays) - set(shapes))
    mis_shaped = sorted(
        f"{path}: file {tuple(array.shape)}, model {shapes[path]}"
        for path, array in arrays.items()
        if path in shapes and tuple(array.shape) != shapes[path])
    if missing or unexpected or mis_shaped:
        raise CheckpointMismatchError(filepath, missing=missing, unexpected=unexpected,
                                      mis_shaped=mis_shaped)
    if not adapted_projections(encoder_of(model)):
        enable_lora(model, settings["rank"], settings["targets"], alpha=settings["alpha"],
                    also_train=settings["also_train"])
    weights = named(model.weights)
    for path, array in arrays.items():
        weights[path].assign(array)
    return lora_summary(model)
