"""The preset folder format: its file names, `is_preset` and `read_preset`.

A preset folder (`save_to_preset`) holds:

    preset.json            what the folder holds: the format version, the model's class
                           and family, its sequence length, casing and tokenizer kind, the
                           head's label names, the `kbc` task settings, how it was trained
                           and its metrics
    config.json            the encoder's BertConfig in BERT's original key names (readable
                           by Hugging Face and google-research code; model.keras carries its
                           own, which is what loads)
    model.keras            the model: architecture and weights, without optimizer state
                           and without its preprocessor (the files below are its
                           vocabulary; `from_preset` attaches the preprocessor they make)
    vocab.txt | vocab.json + merges.txt | spiece.model | sentencepiece.bpe.model
                           the vocabulary: WordPiece, byte-level BPE, SentencePiece or
                           XLM-RoBERTa's SentencePiece
    tokenizer_config.json  the casing (`do_lower_case`, and `keep_accents` for SentencePiece)
    README.md              the model card: what it is, how it was trained, its metrics

The tokenizer files are those of a Hugging Face checkpoint, so `BertPreprocessor(folder)`
and `kbc finetune --checkpoint folder` read the folder as they read one.
"""

from __future__ import annotations

import json
import os

from keras_bert_core.checkpoints.keras_file import MODEL_FILE, PRESET_FILE, is_preset_folder
from keras_bert_core.errors import CheckpointError

__all__ = ["CARD_FILE", "CONFIG_FILE", "FORMAT", "FORMAT_VERSION", "MODEL_FILE", "PRESET_FILE",
           "check_settings", "is_preset", "read_json", "read_preset", "version", "write_json"]

CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
FORMAT = "keras_bert_core preset"
FORMAT_VERSION = 1


def _integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


# The kinds of setting a preset.json (or a kbc run's config.json) holds: a test and what the
# error says it must be. A hand-edited value would otherwise fail deep inside TensorFlow, or
# be taken for something else (`seq_length: 0` for unset, `lower_case: "no"` for true).
_KINDS = {
    "length": (lambda value: _integer(value) and value >= 2, "an integer of at least 2"),
    "count": (lambda value: _integer(value) and value >= 1, "a positive integer"),
    "number": (lambda value: _integer(value) or isinstance(value, float), "a number"),
    "flag": (lambda value: isinstance(value, bool), "true or false"),
    "class": (lambda value: isinstance(value, str), "a class name"),
    "name": (lambda value: value is None or isinstance(value, str), "a string or null"),
    "names": (lambda value: value is None or isinstance(value, list)
              and all(isinstance(name, str) for name in value), "a list of strings or null"),
    "object": (lambda value: value is None or isinstance(value, dict), "an object or null"),
}
# The settings of a fine-tuning task (`tasks.task.Task.settings`) and their kinds.
TASK_SETTINGS = {
    "name": "name", "seq_length": "length", "lower_case": "flag", "label_names": "names",
    "doc_stride": "count", "max_query_length": "count", "max_answer_length": "count",
    "null_score_threshold": "number", "num_choices": "length", "regression": "flag",
    "version_2": "flag", "text_column": "name", "pair_column": "name", "label_column": "name",
    "question_column": "name", "choices_column": "name", "context_column": "name",
}
_PRESET_SETTINGS = {"model_class": "class", "seq_length": "length", "lower_case": "flag",
                    "tokenizer": "name", "label_names": "names", "task": "object"}


def check_settings(values, kinds, file, prefix=""):
    """Raises a `CheckpointError` naming `file` and the key of the first of `values` that is
    not of its kind in `kinds` (e.g. `TASK_SETTINGS`); keys `kinds` does not name pass.

    Example:
    >>> check_settings({"seq_length": "abc"}, TASK_SETTINGS, "preset.json", prefix="task.")
    Traceback (most recent call last):
    ...
    keras_bert_core.errors.CheckpointError: preset.json: "task.seq_length" is 'abc'; \
expected an integer of at least 2
    """
    for key, kind in kinds.items():
        fits, description = _KINDS[kind]
        if key in values and not fits(values[key]):
            raise CheckpointError(f"{file}: \"{prefix}{key}\" is {values[key]!r}; expected "
                                  f"{description}")


def is_preset(path):
    """Whether `path` is a folder written by `save_to_preset` (it holds preset.json)."""
    return is_preset_folder(os.fspath(path))


def read_preset(path):
    """The contents of a preset folder's preset.json (see the module docstring), checked.

    Raises:
        CheckpointError: the file is missing, not JSON, not a preset's, from a newer
            version of the format, or a setting is not of its kind (`seq_length` an
            integer, `lower_case` true or false, ...; the key is named).
    """
    file = os.path.join(os.fspath(path), PRESET_FILE)
    metadata = read_json(file, what="a preset's preset.json")
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"{file}: not a keras_bert_core preset (its \"format\" is "
                              f"{metadata.get('format')!r}, not {FORMAT!r})")
    version_read = metadata.get("format_version")
    if not isinstance(version_read, int) or version_read > FORMAT_VERSION:
        raise CheckpointError(f"{file}: preset format version {version_read!r}; this "
                              f"keras_bert_core ({version()}) reads version "
                              f"{FORMAT_VERSION}: upgrade keras_bert_core")
    missing = [key for key in ("model_class", "seq_length", "lower_case") if key not in metadata]
    if missing:
        raise CheckpointError(f"{file}: lacks {', '.join(missing)}")
    check_settings(metadata, _PRESET_SETTINGS, file)
    check_settings(metadata.get("task") or {}, TASK_SETTINGS, file, prefix="task.")
    return metadata


def read_json(file, what):
    """The JSON object in `file` (`what`: what it should be, for the error)."""
    try:
        with open(file, encoding="utf-8") as f:
            values = json.load(f)
    except ValueError as e:
        raise CheckpointError(f"{file}: not valid JSON ({e}); expected {what}") from None
    if not isinstance(values, dict):
        raise CheckpointError(f"{file}: expected {what}, a JSON object")
    return values


def write_json(file, values):
    with open(file, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2)
        f.write("\n")


def version():
    """The keras_bert_core version that writes (and reads) presets."""
    from keras_bert_core import __version__

    return __version__
