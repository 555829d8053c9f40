"""`from_preset`: the model and preprocessor of a preset folder, a `kbc` run or any
checkpoint `load_checkpoint` reads."""

from __future__ import annotations

import math
import os

from keras_bert_core.errors import CheckpointError
from keras_bert_core.presets.folder import (
    CONFIG_FILE,
    MODEL_FILE,
    PRESET_FILE,
    is_preset,
    read_json,
    read_preset,
)
from keras_bert_core.presets.runs import find_run, load_run


def from_preset(path, *, seq_length=None, lower_case=None):
    """The model and `BertPreprocessor` of a preset folder, a `kbc` run or a checkpoint.

    - a preset folder (`save_to_preset`): the model it holds, with its sequence length
      and casing;
    - a `kbc` run directory (or the model.keras inside one): a fine-tuning or distillation
      run's task model, a pretraining run's encoder, with the run's vocabulary, sequence
      length and casing;
    - any checkpoint `load_checkpoint` reads (Hugging Face, google-research TF1, Model
      Garden TF2, keras-hub, `.keras`): its encoder (or the task model a `.keras` file
      holds), with the vocabulary files in its folder; a sentence-transformers folder
      (`modules.json`): its `BertEmbedder` (pooling, Dense, Normalize, prompts), with its
      `max_seq_length` and `do_lower_case`. The casing is what those files say
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
        path: the folder or file; or a Hugging Face Hub name, `"hf://org/name"`
            (`"hf://org/name@revision"` pins a branch, tag or commit), which the `hub` extra
            downloads into the Hub's cache, or finds there (`HF_HUB_OFFLINE=1`).
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
    from keras_bert_core.checkpoints.hub_names import resolve
    from keras_bert_core.checkpoints.huggingface import check_special_token_ids
    from keras_bert_core.checkpoints.readers import tf_checkpoint_prefix

    path = resolve(path)
    if not os.path.exists(path) and tf_checkpoint_prefix(path) is None:
        raise CheckpointError(f"{path}: no such file or folder")
    # Each loader: (model, vocabulary for BertPreprocessor, the source's length and casing).
    if is_preset(path):
        model, vocabulary, defaults = _load_preset(path)
    elif (run := find_run(path)) is not None:
        model, vocabulary, defaults = load_run(*run)
    else:
        model, vocabulary, defaults = _load_checkpoint(path)
    encoder = getattr(model, "encoder", None) or model
    # A checkpoint's stated length may exceed its position table (RoBERTa's offset).
    stated = min(defaults["seq_length"] or math.inf, encoder.config.max_sequence_length)
    preprocessor = _preprocessor(
        vocabulary, seq_length or stated,
        defaults["lower_case"] if lower_case is None else lower_case, path)
    try:
        encoder.config.check_fits(
            preprocessor.tokenizer.vocabulary_size(), preprocessor.seq_length,
            vocabulary=_vocabulary_name(vocabulary, path), model=path)
        check_special_token_ids(path, preprocessor.packer, _vocabulary_name(vocabulary, path))
    except CheckpointError:
        raise
    except ValueError as e:
        raise CheckpointError(str(e)) from None
    preprocessor = _windowed_as_its_own(model, preprocessor)
    return _with_preprocessor(model, preprocessor), preprocessor


def _vocabulary_name(vocabulary, path):
    """The vocabulary file a loader gave (a folder names the file it holds), or the
    tokenizer inside the model of `path`, as messages name it."""
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    if not isinstance(vocabulary, (str, os.PathLike)):
        return f"the vocabulary inside {path}"
    return find_vocabulary(vocabulary).file or os.fspath(vocabulary)


def _load_preset(path):
    from keras_bert_core.checkpoints.keras_file import load_model

    metadata = read_preset(path)
    _check_files(path, metadata)
    model = load_model(os.path.join(path, MODEL_FILE))
    if type(model).__name__ != metadata["model_class"]:
        raise CheckpointError(f"{path}: {MODEL_FILE} holds a {type(model).__name__}, but "
                              f"{PRESET_FILE} says {metadata['model_class']}")
    _check_label_names(path, metadata, model)
    return model, path, {"seq_length": metadata["seq_length"],
                         "lower_case": metadata["lower_case"]}


def _check_label_names(path, metadata, model):
    """Raises unless each list of label names in preset.json names every class of the
    model's head (answers would otherwise name the wrong class, or fail on the last ones)."""
    classes = getattr(model, "num_classes", None)
    lists = {"label_names": metadata.get("label_names"),
             "task.label_names": (metadata.get("task") or {}).get("label_names")}
    for key, names in lists.items():
        if classes is not None and names is not None and len(names) != classes:
            raise CheckpointError(
                f"{os.path.join(path, PRESET_FILE)}: \"{key}\" has {len(names)} names, but "
                f"the {type(model).__name__} in {MODEL_FILE} has {classes} classes")


def _check_files(path, metadata):
    """Names every file a preset needs and lacks: model.keras and its vocabulary files."""
    from keras_bert_core.text.vocabulary.files import (
        DEBERTA_MODEL,
        TOKENIZER_CONFIG,
        VOCABULARY_FILES,
    )

    kind = metadata.get("tokenizer")
    vocabulary = VOCABULARY_FILES.get(kind, ())
    if os.path.isfile(os.path.join(path, DEBERTA_MODEL)):  # DeBERTa's SentencePiece model
        vocabulary = (DEBERTA_MODEL,)
    needed = [MODEL_FILE, *vocabulary, TOKENIZER_CONFIG]
    missing = [name for name in needed if not os.path.isfile(os.path.join(path, name))]
    if missing:
        raise CheckpointError(f"{path}: an incomplete preset: it lacks {', '.join(missing)}")


def _load_checkpoint(path):
    from keras_bert_core.checkpoints import keras_file, sentence_transformers
    from keras_bert_core.checkpoints.loader import detect_format, load_checkpoint
    from keras_bert_core.models import BertEncoder, BertPretrainer

    if sentence_transformers.matches(path):
        model, folder = sentence_transformers.load(path)
        return model, folder.transformer, {"seq_length": folder.seq_length,
                                           "lower_case": folder.lower_case}
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
    length = read_json(file, what="a tokenizer_config.json").get("model_max_length")
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
    settings = read_json(tokenizer, what="keras-hub's tokenizer.json").get("config", {})
    preprocessor = os.path.join(folder, "preprocessor.json")
    length = None
    if os.path.isfile(preprocessor):
        length = read_json(preprocessor, what="keras-hub's preprocessor.json").get(
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


def _windowed_as_its_own(model, preprocessor):
    """`preprocessor`, in windows (`LongTextPreprocessor`) for a model that reads long
    texts as windows: as its own preprocessor's, else as its task settings say (a preset
    keeps them), else a classifier's that joins windows gets the default windows."""
    from keras_bert_core.text import LongTextPreprocessor

    own = getattr(model, "preprocessor", None)
    settings = getattr(model, "task_settings", None) or {}
    if isinstance(preprocessor, LongTextPreprocessor):
        return preprocessor
    if isinstance(own, LongTextPreprocessor):
        windows = {"stride": own.stride, "max_windows": own.max_windows}
    elif settings.get("long_texts") == "windows":
        windows = {name: settings[name] for name in ("stride", "max_windows")
                   if name in settings}
    elif getattr(model, "window_aggregation", None) is not None:
        windows = {}
    else:
        return preprocessor
    return LongTextPreprocessor.from_preprocessor(preprocessor, **windows)


def _with_preprocessor(model, preprocessor):
    """`model`, carrying `preprocessor` when it is a task model."""
    from keras_bert_core.models import TaskModel

    if isinstance(model, TaskModel):
        model.preprocessor = preprocessor
    return model
