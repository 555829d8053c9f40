"""The model card (README.md) of a preset folder."""

from __future__ import annotations

import math

# How a run was trained: its arguments worth a line of the model card, in card order.
TRAINING_ARGUMENTS = {
    "task": "task", "checkpoint": "started from", "teacher": "distilled from",
    "preset": "architecture",
    "train": "training data", "validation": "validation data",
    "tfds": "TensorFlow Datasets task", "epochs": "epochs",
    "batch_size": "batch size", "learning_rate": "peak learning rate",
    "warmup_fraction": "warmup fraction", "optimizer": "optimizer",
    "accumulation_steps": "gradient accumulation steps", "lora": "LoRA rank",
    "seq_length": "sequence length", "mixed_precision": "mixed precision",
    "strategy": "distribution strategy", "seed": "seed"}


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
    lines += _table(training, TRAINING_ARGUMENTS) if training else ["Not recorded."]
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
                 "distilbert": "DistilBERT", "modernbert": "ModernBERT",
                 "deberta": "DeBERTa-v3", "xlm-roberta": "XLM-RoBERTa"}
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
