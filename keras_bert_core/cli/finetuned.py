"""A fine-tuned model as `kbc evaluate`, `predict` and `export` take it: a `.keras` file
alone, a `kbc finetune` run (or its model.keras), or a preset folder."""

import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.model_building import MODEL_FILE, model_path, run_directory_of
from keras_bert_core.cli.run_dir import RunDirectory
from keras_bert_core.cli.tasks import TASK_NAMES, task_for
from keras_bert_core.folder_lock import other_writer


def load_finetuned(path):
    """`(model, task, preprocessor)` of a fine-tuned model: a `.keras` file that carries
    its preprocessor and task settings (`TaskModel.task_settings`) is read alone; a model
    saved without them (release 0.1.0) is read with its run's config.json and vocabulary;
    a preset folder with its preset.json (`keras_bert_core.presets`)."""
    from keras_bert_core.checkpoints.keras_file import load_model
    from keras_bert_core.presets import is_preset
    from keras_bert_core.presets.runs import unfinished_run

    if is_preset(path):
        return _load_preset(path)
    if (os.path.isdir(path) and not os.path.isfile(os.path.join(path, MODEL_FILE))
            and other_writer(path)):  # a run being written, maybe still without config.json
        raise UserError(unfinished_run(path, None))
    # A folder that is no finished fine-tuning run is refused before the model loads.
    run = _run_config(path) if os.path.isdir(path) else None
    model = load_model(model_path(path))
    settings = getattr(model, "task_settings", None) or {}
    if settings.get("name") in TASK_NAMES and model.preprocessor is not None:
        _check_run_vocabulary(path, model)
        return model, task_for(settings["name"], dict(settings)), model.preprocessor
    task, preprocessor = _run_task(*(run or _run_config(path)))
    _check_fits(model, preprocessor, os.path.dirname(model_path(path)) or ".", path)
    return model, task, preprocessor


def _check_run_vocabulary(path, model):
    """The vocabulary files of the run holding `path` must fit its model, as the copy inside
    it does: `from_preset` and a release-0.1.0 model read those files."""
    from keras_bert_core.presets.runs import find_run
    from keras_bert_core.text import BertPreprocessor
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    run = find_run(path)
    if run is None:
        return
    try:
        find_vocabulary(run[0])
    except ValueError:  # a run folder without vocabulary files: the model's own copy serves
        return
    own = model.preprocessor
    try:
        files = BertPreprocessor(run[0], seq_length=own.seq_length, lower_case=own.lower_case)
    except ValueError as e:
        raise UserError(f"{run[0]}: {e}" if run[0] not in str(e) else str(e)) from None
    _check_fits(model, files, run[0], path)


def _check_fits(model, preprocessor, folder, path):
    """One line when the vocabulary files in `folder` do not fit the model of `path`."""
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    vocabulary = find_vocabulary(folder).file
    try:
        model.encoder.config.check_fits(preprocessor.tokenizer.vocabulary_size(),
                                        preprocessor.seq_length, vocabulary=vocabulary,
                                        model=model_path(path))
    except ValueError as e:
        raise UserError(str(e)) from None


def _run_config(path):
    """`(run folder, its config)` of the fine-tuning run holding `path`, or a `UserError`
    that says what `path` is instead."""
    from keras_bert_core.presets.runs import unfinished_run

    folder = run_directory_of(path)
    if folder is None:
        raise UserError(f"{path} is not a kbc fine-tuning run: its folder has no config.json "
                        "with the task settings, and the model carries none")
    try:
        config = RunDirectory.open(folder).config()
        command = config["command"]
    except (ValueError, KeyError, TypeError):  # another tool's config.json (e.g. Hugging Face)
        raise UserError(f"{folder} is not a kbc run: its config.json was not written by "
                        "kbc") from None
    if not config.get("task"):
        raise UserError(f"{folder} is a `kbc {command}` run, not a fine-tuned model")
    if os.path.isdir(path) and not os.path.isfile(os.path.join(folder, MODEL_FILE)):
        raise UserError(unfinished_run(folder, command))
    return folder, config


def _run_task(folder, config):
    """`(task, preprocessor)` from the run folder (and its config) of a model saved without
    them."""
    from keras_bert_core.text import BertPreprocessor

    task = task_for(config["task"]["name"], config["task"])
    # The run's vocabulary files, of whichever kind (runs saved before other kinds: vocab.txt).
    try:
        preprocessor = BertPreprocessor(folder, seq_length=task.settings["seq_length"],
                                        lower_case=task.settings["lower_case"])
    except ValueError as e:
        raise UserError(f"{folder}: {e}" if folder not in str(e) else str(e)) from None
    return task, preprocessor


def _load_preset(path):
    """`(model, task, preprocessor)` of a preset folder that holds a task model."""
    from keras_bert_core.presets import from_preset, read_preset

    settings = read_preset(path).get("task")
    if not settings or settings.get("name") not in TASK_NAMES:
        raise UserError(f"{path} is a preset of an encoder, not of a fine-tuned model; "
                        f"fine-tune it first: kbc finetune --checkpoint {path} ...")
    model, preprocessor = from_preset(path)
    return model, task_for(settings["name"], settings), preprocessor


def load_embedder(path):
    """`(model, task)` of an embedding model (`BertEmbedder`) as `kbc embed` and `kbc evaluate`
    take it: a `kbc finetune --task embed` run, its model.keras or preset, or any model
    `kbc.from_preset` reads as an embedder (a sentence-transformers folder, a `.keras`
    file)."""
    from keras_bert_core.errors import CheckpointError
    from keras_bert_core.models.embedder import BertEmbedder
    from keras_bert_core.presets import from_preset, is_preset
    from keras_bert_core.presets.runs import find_run
    from keras_bert_core.tasks.fine_tuning import TASKS

    if is_preset(path) or find_run(path) is not None:
        model, task, _ = load_finetuned(path)
    else:
        try:
            model, _ = from_preset(path)
        except (CheckpointError, ValueError) as e:
            raise UserError(str(e)) from None
        task = TASKS["embed"](dict(getattr(model, "task_settings", None) or {}))
    if not isinstance(model, BertEmbedder):
        raise UserError(f"{path} holds a {type(model).__name__}, not an embedding model; "
                        f"fine-tune one: kbc finetune --task embed --checkpoint {path} ...")
    return model, task
