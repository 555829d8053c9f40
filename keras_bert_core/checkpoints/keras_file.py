"""`.keras` files: a saved `BertEncoder`, or a task model with one inside; and the
model.keras of a preset folder (`keras_bert_core.presets`), which loads as one."""

from __future__ import annotations

import os
import warnings

from keras_bert_core.checkpoints.readers import describe_error
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models import BertEncoder

# A preset folder holds its model as model.keras beside preset.json (the rest of the
# folder is `keras_bert_core.presets`' business: checkpoints read only the model).
PRESET_FILE = "preset.json"
MODEL_FILE = "model.keras"


def matches(path):
    return path.endswith(".keras")


def is_preset_folder(path):
    """Whether `path` is a preset folder (it holds preset.json)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, PRESET_FILE))


def model_of_preset(path):
    """The model.keras of a preset folder, other paths as they are."""
    return os.path.join(path, MODEL_FILE) if is_preset_folder(path) else path


def find_model(model, cls):
    """The first instance of `cls` in `model` or nested in its layers (depth first), or `None`."""
    if isinstance(model, cls):
        return model
    # Task models run their encoder's layers in their own graph (see `BertEncoder.encode`):
    # the encoder itself is their `encoder` attribute, not one of their `layers`.
    children = list(getattr(model, "layers", ()))
    if getattr(model, "encoder", None) is not None:
        children.insert(0, model.encoder)
    for layer in children:
        found = find_model(layer, cls)
        if found is not None:
            return found
    return None


def load_model(path):
    """`keras.saving.load_model`, with failures reported as a `CheckpointError` on `path`.

    Weights only: the optimizer state is not restored (task models compile themselves). A
    task model that carries a preprocessor is checked against it (`BertConfig.check_fits`).
    """
    import zipfile

    import keras

    if not os.path.exists(path):  # else Keras's paragraph on the formats it supports
        raise CheckpointError(f"{path}: no such file or folder")
    # Keras reports a torn or truncated archive as "File not found".
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise CheckpointError(f"{path}: cannot load this .keras file: it is not a complete "
                              "zip archive (truncated, or a file of another kind)")
    try:
        with warnings.catch_warnings():
            # The saved optimizer state is left out on purpose; Keras would warn that the
            # fresh, unbuilt optimizer cannot take it.
            warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
            model = keras.saving.load_model(path, compile=False)
    except Exception as e:  # zip, JSON or deserialization errors
        raise CheckpointError(f"{path}: cannot load this .keras file ({describe_error(e)})") \
            from None
    _check_own_preprocessor(model, path)
    return model


def _check_own_preprocessor(model, path):
    """A task model saved with its preprocessor must fit it: the vocabulary travels inside
    the file, and a model saved with a cut or foreign one would answer from unknown ids."""
    preprocessor = getattr(model, "preprocessor", None)
    encoder = getattr(model, "encoder", None)
    if preprocessor is None or not isinstance(encoder, BertEncoder):
        return
    try:
        encoder.config.check_fits(
            preprocessor.tokenizer.vocabulary_size(), preprocessor.seq_length,
            vocabulary=f"the vocabulary inside {path}",
            seq_length_name=f"the seq_length of the preprocessor inside {path}", model=path)
    except CheckpointError:
        raise
    except ValueError as e:
        raise CheckpointError(str(e)) from None


def load(path):
    """Load a `.keras` file and return `(encoder, config)` of the `BertEncoder` inside."""
    model = load_model(path)
    encoder = find_model(model, BertEncoder)
    if encoder is None:
        raise CheckpointError(f"{path}: holds a {type(model).__name__} with no BertEncoder inside")
    return encoder, encoder.config
