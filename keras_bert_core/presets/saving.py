"""`save_to_preset`: a model and its preprocessor written as one preset folder."""

from __future__ import annotations

import os

from keras_bert_core.presets.folder import (
    CARD_FILE,
    CONFIG_FILE,
    FORMAT,
    FORMAT_VERSION,
    MODEL_FILE,
    PRESET_FILE,
    version,
    write_json,
)
from keras_bert_core.presets.model_card import model_card

# The `kbc` task a head answers (`keras_bert_core.cli.tasks`), by model class.
_TASKS = {"BertClassifier": "classify", "BertMultiLabelClassifier": "multilabel",
          "BertSpanLabeler": "squad", "BertTokenClassifier": "ner", "BertMultipleChoice": "choice"}


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
    >>> labels = kbc.presets.read_preset(folder)["label_names"]
    >>> type(loaded).__name__, preprocessor.seq_length, labels
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
    config = (getattr(model, "encoder", None) or model).config
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
        "keras_bert_core_version": version(),
    }
    with replaced_when_complete(path) as partial:
        os.makedirs(partial)
        _bare(model).save(os.path.join(partial, MODEL_FILE))
        config.to_json(os.path.join(partial, CONFIG_FILE))
        files = list(write_vocabulary_files(preprocessor.tokenizer, partial))
        metadata["files"] = sorted([PRESET_FILE, MODEL_FILE, CONFIG_FILE, CARD_FILE, *files])
        write_json(os.path.join(partial, PRESET_FILE), metadata)
        with open(os.path.join(partial, CARD_FILE), "w", encoding="utf-8") as f:
            f.write(model_card(metadata, config, model.count_params()))
    return path


def _servable(model):
    """The model a preset holds: a pretrainer's encoder, other package models as they are."""
    from keras_bert_core.models import BertEncoder, BertPretrainer, TaskModel

    if isinstance(model, BertPretrainer):
        return model.encoder
    if not isinstance(model, (BertEncoder, TaskModel)):
        raise TypeError(f"save_to_preset saves a BertEncoder or a task model of this package, "
                        f"not a {type(model).__name__}")
    return model


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
