"""`kbc` run directories as `from_preset` reads them, and what a run or a preset records
of its training (`trained_seq_length`, `training_record`)."""

from __future__ import annotations

import json
import os

from keras_bert_core.errors import CheckpointError
from keras_bert_core.presets.folder import (
    CONFIG_FILE,
    MODEL_FILE,
    TASK_SETTINGS,
    check_settings,
    is_preset,
    read_json,
    read_preset,
)
from keras_bert_core.presets.model_card import TRAINING_ARGUMENTS

# A kbc run directory, as `keras_bert_core.cli.run_dir` writes it.
RUN_METRICS_FILE = "metrics.json"
_PATH_ARGUMENTS = ("checkpoint", "train", "validation", "teacher")


def trained_seq_length(path):
    """The sequence length the task model at `path` was trained with: a preset's, or a
    `kbc` fine-tuning or distillation run's; None for pretraining runs (fine-tuning picks
    its own length, often shorter) and other checkpoints (whose tokenizer files state at
    most a limit)."""
    path = os.fspath(path)
    if is_preset(path):
        return read_preset(path)["seq_length"]
    if (run := find_run(path)) is not None:
        return (run[1].get("task") or {}).get("seq_length")
    return None


def training_record(path):
    """`(training, metrics)`: how the model at `path` was trained and its scores, as
    `save_to_preset` takes them: a preset's own, or those of a `kbc` run (its arguments,
    paths as base names, and metrics.json); empty dicts for other checkpoints."""
    path = os.fspath(path)
    if is_preset(path):
        metadata = read_preset(path)
        return metadata.get("training") or {}, metadata.get("metrics") or {}
    found = find_run(path)
    if found is None:
        return {}, {}
    folder, run = found
    arguments = run.get("arguments") or {}
    training = {"command": f"kbc {run['command']}"}
    for key in TRAINING_ARGUMENTS:
        value = arguments.get(key)
        if value is None or value is False:
            continue
        training[key] = os.path.basename(value) if key in _PATH_ARGUMENTS else value
    metrics_file = os.path.join(folder, RUN_METRICS_FILE)
    metrics = (read_json(metrics_file, what="a kbc run's metrics.json")
               if os.path.isfile(metrics_file) else {})
    return training, metrics


def find_run(path):
    """`(folder, its config.json)` of the `kbc` run directory that `path` is, or whose
    model.keras it is; else None."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    if os.path.isfile(path) and os.path.basename(path) != MODEL_FILE:
        return None
    config = os.path.join(folder, CONFIG_FILE)
    if not os.path.isfile(config):
        return None
    try:
        with open(config, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError):
        return None
    # Hugging Face and keras-hub folders have a config.json too; a run's names its command.
    if isinstance(values, dict) and "command" in values:
        return folder, values
    return None


def load_run(folder, run):
    """`(model, folder, {seq_length, lower_case})` of the run `find_run` found: a
    pretraining run's encoder, another run's task model."""
    from keras_bert_core.checkpoints.keras_file import load_model
    from keras_bert_core.models import BertPretrainer

    model_file = os.path.join(folder, MODEL_FILE)
    if not os.path.isfile(model_file):
        raise CheckpointError(unfinished_run(folder, run["command"]))
    model = load_model(model_file)
    if isinstance(model, BertPretrainer):
        model = model.encoder
    task = run.get("task") or {}
    check_settings(task, TASK_SETTINGS, os.path.join(folder, CONFIG_FILE), prefix="task.")
    arguments = run.get("arguments") or {}
    lower_case = task.get("lower_case")
    if lower_case is None and not _states_casing(folder):
        # Runs saved before tokenizer_config.json: `--cased` among their arguments.
        cased = arguments.get("cased")
        lower_case = None if cased is None else not cased
    return model, folder, {"seq_length": task.get("seq_length") or arguments.get("seq_length"),
                           "lower_case": lower_case}


def unfinished_run(folder, command):
    """What to say of the `kbc <command>` run `folder` that has no model.keras: it is being
    written by another command (its writer's lock names it), or was stopped and can be
    continued."""
    from keras_bert_core.folder_lock import other_writer

    writer = other_writer(folder)
    if writer:
        return (f"{folder} is being written by {writer}: its {MODEL_FILE} appears when "
                "that command ends")
    return (f"{folder} has not finished training (it has no {MODEL_FILE}); continue it with "
            f"`kbc {command} --resume --run-dir {folder}`")


def _states_casing(folder):
    from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG

    return os.path.isfile(os.path.join(folder, TOKENIZER_CONFIG))
