"""Presets: one folder with everything a model needs to answer raw text, and `from_preset`,
which also loads every checkpoint format and every `kbc` run directory.

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
    vocab.txt | vocab.json + merges.txt | spiece.model
                           the vocabulary: WordPiece, byte-level BPE or SentencePiece
    tokenizer_config.json  the casing (`do_lower_case`, and `keep_accents` for SentencePiece)
    README.md              the model card: what it is, how it was trained, its metrics

The tokenizer files are those of a Hugging Face checkpoint, so `BertPreprocessor(folder)`
and `kbc finetune --checkpoint folder` read the folder as they read one.
"""

from __future__ import annotations

import json
import math
import os

from keras_bert_core.errors import CheckpointError

PRESET_FILE = "preset.json"
MODEL_FILE = "model.keras"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
FORMAT = "keras_bert_core preset"
FORMAT_VERSION = 1
# A kbc run directory, as `keras_bert_core.cli.run_dir` writes it.
RUN_METRICS_FILE = "metrics.json"
# The `kbc` task a head answers (`keras_bert_core.cli.tasks`), by model class.
_TASKS = {"BertClassifier": "classify", "BertSpanLabeler": "squad",
          "BertTokenClassifier": "ner", "BertMultipleChoice": "choice"}
# How a run was trained: its arguments worth a line of the model card, in card order.
_TRAINING_ARGUMENTS = {
    "task": "task", "checkpoint": "started from", "teacher": "distilled from",
    "preset": "architecture",
    "train": "training data", "validation": "validation data",
    "tfds": "TensorFlow Datasets task", "epochs": "epochs",
    "batch_size": "batch size", "learning_rate": "peak learning rate",
    "warmup_fraction": "warmup fraction", "optimizer": "optimizer",
    "accumulation_steps": "gradient accumulation steps", "lora": "LoRA rank",
    "seq_length": "sequence length", "mixed_precision": "mixed precision",
    "strategy": "distribution strategy", "seed": "seed"}
_PATH_ARGUMENTS = ("checkpoint", "train", "validation", "teacher")


def save_to_preset(model, preprocessor, path, *, label_names=None, metrics=None,
                   description=None, training=None, task_settings=None, overwrite=False):
    """Writes `model` and `preprocessor` as a preset folder that `from_preset` loads.

    The folder appears only once complete (written beside `path`, then renamed in), so an
    existing preset is replaced only by a whole new one, and only with `overwrite=True`.

    Args:
        model: a task model (`BertClassifier`, `BertSpanLabeler`, `BertTokenClassifier`,
            `BertMultipleChoice`) or a `BertEncoder`; a `BertPretrainer` is saved as its
            encoder (what fine-tuning starts from).
        preprocessor: the `BertPreprocessor` the model reads: its vocabulary files, casing
            and sequence length go into the folder. None: the task model's own
            (`model.preprocessor`).
        path: the folder to write.
        label_names: the names of a classifier's classes or a tagger's tags, in output
            order (default: `task_settings`' `label_names`, else `LABEL_0`, `LABEL_1`...).
        metrics: a dict of the model's scores (nested dicts allowed), for the card and
            `preset.json`.
        description: the card's first paragraph (default: one made from the model).
        training: a dict of how the model was trained (e.g. `{"epochs": 3}`), for the card.
        task_settings: the `kbc` task settings (data columns, `"name": "pair"` for a
            classifier of text pairs...) that `kbc export`, `predict` and `evaluate` read;
            made from the model when not given.
        overwrite: replace an existing folder at `path`.

    Returns:
        `path`.

    Raises:
        FileExistsError: `path` exists and `overwrite` is False.
        ValueError: there is no preprocessor, or it or the label names do not fit the
            model.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
    >>> model = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=len(vocab), max_position_embeddings=16)), num_classes=2)
    >>> folder = tempfile.mkdtemp() + "/reviews"
    >>> _ = kbc.save_to_preset(model, kbc.BertPreprocessor(vocab, seq_length=16), folder,
    ...                        label_names=["negative", "positive"])
    >>> loaded, preprocessor = kbc.from_preset(folder)
    >>> type(loaded).__name__, preprocessor.seq_length, read_preset(folder)["label_names"]
    ('BertClassifier', 16, ['negative', 'positive'])
    >>> loaded.predict(["a good film"], verbose=0).shape  # it carries its preprocessor
    (1, 2)
    """
    from keras_bert_core.files import replaced_when_complete
    from keras_bert_core.text.vocabulary.files import write_vocabulary_files

    path = os.fspath(path)
    model = _servable(model)
    if preprocessor is None:
        preprocessor = getattr(model, "preprocessor", None)
        if preprocessor is None:
            raise ValueError(f"save_to_preset needs the {type(model).__name__}'s "
                             "preprocessor: pass one (it carries none)")
    config = _encoder(model).config
    config.check_fits(preprocessor.tokenizer.vocabulary_size(), preprocessor.seq_length,
                      vocabulary="the preprocessor's vocabulary",
                      seq_length_name="the preprocessor's seq_length")
    settings = _task_settings(model, preprocessor, label_names, task_settings)
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True to replace it")
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_class": type(model).__name__,
        "family": config.family,
        "seq_length": preprocessor.seq_length,
        "lower_case": preprocessor.lower_case,
        "tokenizer": preprocessor.tokenizer_kind,
        "label_names": settings.get("label_names") if settings else None,
        "task": settings,
        "training": training or {},
        "metrics": metrics or {},
        "description": description,
        "keras_bert_core_version": _version(),
    }
    with replaced_when_complete(path) as partial:
        os.makedirs(partial)
        _bare(model).save(os.path.join(partial, MODEL_FILE))
        config.to_json(os.path.join(partial, CONFIG_FILE))
        files = list(write_vocabulary_files(preprocessor.tokenizer, partial))
        metadata["files"] = sorted([PRESET_FILE, MODEL_FILE, CONFIG_FILE, CARD_FILE, *files])
        _write_json(os.path.join(partial, PRESET_FILE), metadata)
        with open(os.path.join(partial, CARD_FILE), "w", encoding="utf-8") as f:
            f.write(model_card(metadata, config, model.count_params()))
    return path


def from_preset(path, *, seq_length=None, lower_case=None):
    """The model and `BertPreprocessor` of a preset folder, a `kbc` run or a checkpoint.

    - a preset folder (`save_to_preset`): the model it holds, with its sequence length
      and casing;
    - a `kbc` run directory (or the model.keras inside one): a fine-tuning or distillation
      run's task model, a pretraining run's encoder, with the run's vocabulary, sequence
      length and casing;
    - any checkpoint `load_checkpoint` reads (Hugging Face, google-research TF1, Model
      Garden TF2, keras-hub, `.keras`): its encoder (or the task model a `.keras` file
      holds), with the vocabulary files in its folder. The casing is what those files say
      (`tokenizer_config.json`'s `do_lower_case`, else the normalizer in Hugging Face's
      `tokenizer.json`; keras-hub's `tokenizer.json`), else
      uncased for WordPiece and SentencePiece; the sequence length is the one they state
      (`model_max_length`), else the longest the position table holds.

    A `BertPretrainer` (a pretraining run's, or in a `.keras` file) comes back as its
    encoder: `load_pretrainer` loads the pretraining heads too. A task model comes back
    carrying the preprocessor (`model.preprocessor`), so `model.predict(["a text"])` works;
    a task model saved in a `.keras` file with its preprocessor keeps that one when no
    vocabulary files lie beside it.

    Args:
        path: the folder or file.
        seq_length: the longest packed sequence, instead of the source's.
        lower_case: the casing, instead of the source's (e.g. False for a cased
            google-research checkpoint, whose files do not say).

    Returns:
        `(model, preprocessor)`.

    Raises:
        CheckpointError: `path` is none of the above, or lacks a file it needs (each one
            missing is named).

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.checkpoints import save_google_research_checkpoint
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_google_research_checkpoint(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=len(vocab), max_position_embeddings=32)), folder)
    >>> _ = open(folder + "/vocab.txt", "w").write("\\n".join(vocab))
    >>> encoder, preprocessor = kbc.from_preset(folder)
    >>> type(encoder).__name__, preprocessor.seq_length, preprocessor.lower_case
    ('BertEncoder', 32, True)
    """
    from keras_bert_core.checkpoints.readers import tf_checkpoint_prefix

    path = os.fspath(path)
    if not os.path.exists(path) and tf_checkpoint_prefix(path) is None:
        raise CheckpointError(f"{path}: no such file or folder")
    # Each loader: (model, vocabulary for BertPreprocessor, the source's length and casing).
    if is_preset(path):
        model, vocabulary, defaults = _load_preset(path)
    elif (run := _run(path)) is not None:
        model, vocabulary, defaults = _load_run(*run)
    else:
        model, vocabulary, defaults = _load_checkpoint(path)
    encoder = _encoder(model)
    # A checkpoint's stated length may exceed its position table (RoBERTa's offset).
    stated = min(defaults["seq_length"] or math.inf, encoder.config.max_sequence_length)
    preprocessor = _preprocessor(
        vocabulary, seq_length or stated,
        defaults["lower_case"] if lower_case is None else lower_case, path)
    try:
        encoder.config.check_fits(
            preprocessor.tokenizer.vocabulary_size(), preprocessor.seq_length,
            vocabulary=f"the vocabulary of {path}", model=path)
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    return _with_preprocessor(model, preprocessor), preprocessor


def is_preset(path):
    """Whether `path` is a folder written by `save_to_preset` (it holds preset.json)."""
    path = os.fspath(path)
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, PRESET_FILE))


def read_preset(path):
    """The contents of a preset folder's preset.json (see the module docstring), checked.

    Raises:
        CheckpointError: the file is missing, not JSON, not a preset's, or from a newer
            version of the format.
    """
    file = os.path.join(os.fspath(path), PRESET_FILE)
    metadata = _read_json(file, what="a preset's preset.json")
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"{file}: not a keras_bert_core preset (its \"format\" is "
                              f"{metadata.get('format')!r}, not {FORMAT!r})")
    version = metadata.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(f"{file}: preset format version {version!r}; this "
                              f"keras_bert_core ({_version()}) reads version "
                              f"{FORMAT_VERSION}: upgrade keras_bert_core")
    missing = [key for key in ("model_class", "seq_length", "lower_case") if key not in metadata]
    if missing:
        raise CheckpointError(f"{file}: lacks {', '.join(missing)}")
    return metadata


def trained_seq_length(path):
    """The sequence length the task model at `path` was trained with: a preset's, or a
    `kbc` fine-tuning or distillation run's; None for pretraining runs (fine-tuning picks
    its own length, often shorter) and other checkpoints (whose tokenizer files state at
    most a limit)."""
    path = os.fspath(path)
    if is_preset(path):
        return read_preset(path)["seq_length"]
    if (run := _run(path)) is not None:
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
    found = _run(path)
    if found is None:
        return {}, {}
    folder, run = found
    arguments = run.get("arguments") or {}
    training = {"command": f"kbc {run['command']}"}
    for key in _TRAINING_ARGUMENTS:
        value = arguments.get(key)
        if value is None or value is False:
            continue
        training[key] = os.path.basename(value) if key in _PATH_ARGUMENTS else value
    metrics_file = os.path.join(folder, RUN_METRICS_FILE)
    metrics = (_read_json(metrics_file, what="a kbc run's metrics.json")
               if os.path.isfile(metrics_file) else {})
    return training, metrics


def model_card(metadata, config, parameters):
    """The README.md of a preset: what the model is, how to use it, how it was trained and
    its metrics (`metadata`: preset.json's contents; `config`: the encoder's BertConfig)."""
    model_class = metadata["model_class"]
    labels = metadata.get("label_names")
    task = (metadata.get("task") or {}).get("name")
    what = metadata.get("description") or (
        f"A {_FAMILY_NAMES.get(config.family, config.family)} "
        f"{_WHAT.get(task, 'encoder')} made with keras_bert_core "
        f"{metadata.get('keras_bert_core_version')}.")
    casing = "lower-cased" if metadata["lower_case"] else "cased"
    lines = [f"# {model_class} ({config.family})", "", what, "", "## Model", "",
             "| | |", "|---|---|",
             f"| model | `{model_class}`, {parameters:,} parameters |",
             f"| encoder | {config.num_layers} layers, hidden size {config.hidden_size}, "
             f"{config.num_heads} attention heads, vocabulary of {config.vocab_size} |",
             f"| tokenizer | {metadata['tokenizer']}, {casing} |",
             f"| sequence length | {metadata['seq_length']} tokens |"]
    if labels:
        lines.append(f"| labels | {', '.join(f'`{name}`' for name in labels)} |")
    lines += ["", "## Use", "", "```python", "import keras_bert_core as kbc", "",
              'model, preprocessor = kbc.from_preset("path/to/this/folder")',
              _USE.get(task, 'outputs = model(preprocessor(["a text to read"]))').format(
                  choices=", ".join(f'"choice {n + 1}"' for n in range(
                      (metadata.get("task") or {}).get("num_choices", 0)))),
              "```", "", "```sh"]
    if task:
        lines.append("kbc export path/to/this/folder -o exported   # SavedModel and .tflite")
    lines += ["kbc finetune --checkpoint path/to/this/folder --task ... --train ...", "```"]
    lines += ["", "## Training", ""]
    training = metadata.get("training") or {}
    lines += _table(training, _TRAINING_ARGUMENTS) if training else ["Not recorded."]
    lines += ["", "## Metrics", ""]
    metrics = _flat(metadata.get("metrics") or {})
    lines += _table(metrics) if metrics else ["Not recorded."]
    files = metadata.get("files", [])
    lines += ["", "## Files", "", ", ".join(f"`{name}`" for name in files), ""]
    return "\n".join(lines)


# How a task model of the card's task takes raw text.
_USE = {"classify": 'logits = model.predict(["a text to read"])',
        "ner": 'logits = model.predict(["a text to tag"])',
        "pair": 'logits = model.predict((["a first text"], ["a second text"]))',
        "squad": 'spans = model.predict((["a question?"], ["a passage that answers it."]))',
        "choice": 'logits = model.predict((["a question?"], [[{choices}]]))'}
_FAMILY_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "albert": "ALBERT",
                 "distilbert": "DistilBERT"}
_WHAT = {"classify": "text classifier", "pair": "text-pair classifier",
         "squad": "extractive question-answering model", "ner": "token tagger",
         "choice": "multiple-choice model"}


def _table(values, names=None):
    rows = ["| | |", "|---|---|"]
    for key, value in values.items():
        if isinstance(value, float):
            value = f"{value:.4g}" if math.isfinite(value) else str(value)
        rows.append(f"| {(names or {}).get(key, key)} | {value} |")
    return rows


def _flat(metrics, prefix=""):
    flat = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key} "))
        elif isinstance(value, (int, float, str)) and key != "learning_rate":  # not a score
            flat[f"{prefix}{key}"] = value
    return flat


def _servable(model):
    """The model a preset holds: a pretrainer's encoder, other package models as they are."""
    from keras_bert_core.models import BertEncoder, BertPretrainer, TaskModel

    if isinstance(model, BertPretrainer):
        return model.encoder
    if not isinstance(model, (BertEncoder, TaskModel)):
        raise TypeError(f"save_to_preset saves a BertEncoder or a task model of this package, "
                        f"not a {type(model).__name__}")
    return model


def _encoder(model):
    return getattr(model, "encoder", None) or model


def _task_settings(model, preprocessor, label_names, given):
    """The `kbc` task settings of a task model (None for an encoder): `given`'s, with the
    preprocessor's length and casing and the label names, checked against the head."""
    name = _TASKS.get(type(model).__name__)
    if name is None:
        return None
    settings = {"name": name, **(given or {}), "seq_length": preprocessor.seq_length,
                "lower_case": preprocessor.lower_case}
    classes = getattr(model, "num_classes", None)
    if label_names is None:
        label_names = settings.get("label_names")
    if classes is not None:
        # One output and no names: a regression (STS-B); else HF's default names.
        if label_names is None and not (name == "classify" and classes == 1):
            label_names = [f"LABEL_{index}" for index in range(classes)]
        if label_names is not None and len(label_names) != classes:
            raise ValueError(f"{len(label_names)} label names for a {type(model).__name__} "
                             f"of {classes} classes: {list(label_names)}")
        settings["label_names"] = list(label_names) if label_names is not None else None
    elif label_names is not None:
        raise ValueError(f"label_names given for a {type(model).__name__}, which has none")
    if name == "choice":
        settings["num_choices"] = model.num_choices
    return settings


def _bare(model):
    """A task model's copy without optimizer state (a trained model's optimizer holds two
    more copies of the weights, which serving and fine-tuning never read), without a
    preprocessor (the preset's tokenizer files are its vocabulary) and with LoRA adapters
    merged into the kernels; an encoder as it is (Keras saves its kernels merged)."""
    from keras_bert_core.models import TaskModel, merge_lora
    from keras_bert_core.models.lora import has_lora

    if not isinstance(model, TaskModel):
        return model
    if has_lora(model):
        copy = merge_lora(model)  # a new model, whose optimizer holds no state
        copy.preprocessor = None
        return copy
    config = {key: value for key, value in model.get_config().items()
              if key != "preprocessor"}
    copy = type(model).from_config(config)
    copy.set_weights(model.get_weights())
    return copy


def _load_preset(path):
    from keras_bert_core.checkpoints.keras_file import load_model

    metadata = read_preset(path)
    _check_files(path, metadata)
    model = load_model(os.path.join(path, MODEL_FILE))
    if type(model).__name__ != metadata["model_class"]:
        raise CheckpointError(f"{path}: {MODEL_FILE} holds a {type(model).__name__}, but "
                              f"{PRESET_FILE} says {metadata['model_class']}")
    return model, path, {"seq_length": metadata["seq_length"],
                         "lower_case": metadata["lower_case"]}


def _check_files(path, metadata):
    """Names every file a preset needs and lacks: model.keras and its vocabulary files."""
    from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG, VOCABULARY_FILES

    kind = metadata.get("tokenizer")
    needed = [MODEL_FILE, *VOCABULARY_FILES.get(kind, ()), TOKENIZER_CONFIG]
    missing = [name for name in needed if not os.path.isfile(os.path.join(path, name))]
    if missing:
        raise CheckpointError(f"{path}: an incomplete preset: it lacks {', '.join(missing)}")


def _run(path):
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


def _load_run(folder, run):
    from keras_bert_core.checkpoints.keras_file import load_model
    from keras_bert_core.models import BertPretrainer

    model_file = os.path.join(folder, MODEL_FILE)
    if not os.path.isfile(model_file):
        raise CheckpointError(f"{folder}: a kbc {run['command']} run that has not finished "
                              f"(it has no {MODEL_FILE}); continue it with --resume")
    model = load_model(model_file)
    if isinstance(model, BertPretrainer):
        model = model.encoder
    task = run.get("task") or {}
    arguments = run.get("arguments") or {}
    lower_case = task.get("lower_case")
    if lower_case is None and not _states_casing(folder):
        # Runs saved before tokenizer_config.json: `--cased` among their arguments.
        cased = arguments.get("cased")
        lower_case = None if cased is None else not cased
    return model, folder, {"seq_length": task.get("seq_length") or arguments.get("seq_length"),
                           "lower_case": lower_case}


def _states_casing(folder):
    from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG

    return os.path.isfile(os.path.join(folder, TOKENIZER_CONFIG))


def _load_checkpoint(path):
    from keras_bert_core.checkpoints import keras_file
    from keras_bert_core.checkpoints.loader import detect_format, load_checkpoint
    from keras_bert_core.models import BertEncoder, BertPretrainer

    try:
        fmt = detect_format(path)
    except CheckpointError as e:
        raise CheckpointError(
            f"{path}: not a preset (no {PRESET_FILE}), not a kbc run (no {CONFIG_FILE} naming "
            f"a command) and no checkpoint: {str(e).split(': ', 1)[-1]}") from None
    if fmt == "keras":
        model = keras_file.load_model(path)
        if isinstance(model, BertPretrainer) or not hasattr(model, "encoder"):
            model = keras_file.find_model(model, BertEncoder)
            if model is None:
                raise CheckpointError(f"{path}: holds no BertEncoder")
    else:
        model, _ = load_checkpoint(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
    if fmt == "keras_hub":
        return model, *_keras_hub_tokenizer(folder)
    own = getattr(model, "preprocessor", None)
    if own is not None and not _holds_vocabulary(folder):
        # A BertPreprocessor's tokenizer layer, which BertPreprocessor takes as it is.
        return model, own.tokenizer, {"seq_length": own.seq_length, "lower_case": None}
    return model, folder, {"seq_length": _stated_seq_length(folder), "lower_case": None}


def _holds_vocabulary(folder):
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    try:
        find_vocabulary(folder)
    except ValueError:
        return False
    return True


def _stated_seq_length(folder):
    """The sequence length a Hugging Face tokenizer_config.json states (`model_max_length`;
    Hugging Face writes a huge number for "no limit", which the position table then caps)."""
    from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG

    file = os.path.join(folder, TOKENIZER_CONFIG)
    if not os.path.isfile(file):
        return None
    length = _read_json(file, what="a tokenizer_config.json").get("model_max_length")
    return length if isinstance(length, int) and 0 < length < 1_000_000 else None


def _keras_hub_tokenizer(folder):
    """`(vocabulary file, {seq_length, lower_case})` of a keras-hub preset's BertTokenizer
    (tokenizer.json, assets/tokenizer/vocabulary.txt) and preprocessor.json."""
    vocabulary = os.path.join(folder, "assets", "tokenizer", "vocabulary.txt")
    tokenizer = os.path.join(folder, "tokenizer.json")
    if not (os.path.isfile(vocabulary) and os.path.isfile(tokenizer)):
        raise CheckpointError(f"{folder}: a keras-hub backbone without its tokenizer (no "
                              "tokenizer.json with assets/tokenizer/vocabulary.txt): save "
                              "the tokenizer too (tokenizer.save_to_preset)")
    settings = _read_json(tokenizer, what="keras-hub's tokenizer.json").get("config", {})
    preprocessor = os.path.join(folder, "preprocessor.json")
    length = None
    if os.path.isfile(preprocessor):
        length = _read_json(preprocessor, what="keras-hub's preprocessor.json").get(
            "config", {}).get("sequence_length")
    return vocabulary, {"seq_length": length, "lower_case": settings.get("lowercase")}


def _preprocessor(vocabulary, seq_length, lower_case, source):
    from keras_bert_core.text import BertPreprocessor

    try:
        return BertPreprocessor(vocabulary, seq_length=seq_length, lower_case=lower_case)
    except (ValueError, OSError) as e:
        message = str(e)
        raise CheckpointError(message if source in message else f"{source}: {message}") \
            from None


def _with_preprocessor(model, preprocessor):
    """`model`, carrying `preprocessor` when it is a task model."""
    from keras_bert_core.models import TaskModel

    if isinstance(model, TaskModel):
        model.preprocessor = preprocessor
    return model


def _read_json(file, what):
    try:
        with open(file, encoding="utf-8") as f:
            values = json.load(f)
    except ValueError as e:
        raise CheckpointError(f"{file}: not valid JSON ({e}); expected {what}") from None
    if not isinstance(values, dict):
        raise CheckpointError(f"{file}: expected {what}, a JSON object")
    return values


def _write_json(file, values):
    with open(file, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2)
        f.write("\n")


def _version():
    from keras_bert_core import __version__

    return __version__
