"""The options of the fine-tuning tasks (`keras_bert_core.tasks.fine_tuning`) and where
`kbc finetune`, `evaluate` and `predict` read their data: files, text lines, standard input,
TensorFlow Datasets. A task's settings (columns, label names, lengths) travel in its model
(`TaskModel.task_settings`), so `evaluate` and `predict` read data exactly as training did.
"""

import codecs
import io
import os
import sys

from keras_bert_core.cli import UserError
from keras_bert_core.cli.options import non_empty, positive_int

# `kbc finetune --task` names (`fine_tuning.TASKS`, which loads TensorFlow).
TASK_NAMES = ("choice", "classify", "embed", "multilabel", "ner", "pair", "squad")
# `kbc finetune --task embed --loss` names (`tasks.embedding.fine_tuning.LOSSES`).
EMBED_LOSSES = ("contrastive", "symmetric", "triplet", "cosine")
# Task options and their defaults (`fine_tuning.DEFAULT_SETTINGS`); `evaluate` and `predict`
# default to the training run's.
DATA_OPTIONS = {
    "text_column": ("text", "classify/pair/multilabel: column of the (first) text"),
    "pair_column": ("text_b", "pair: column of the second text"),
    "label_column": ("label", "classify/pair/multilabel/choice: column of the label(s)"),
    "label_delimiter": (",", "multilabel: what separates the labels in a CSV/TSV field "
                             "(JSONL: a list)"),
    "question_column": ("question", "choice: key of the question"),
    "choices_column": ("choices", "choice: key of the list of choices"),
    "context_column": (None, "choice: key of an optional passage"),
    "doc_stride": (128, "squad: wordpieces between the starts of a context's windows"),
    "max_query_length": (64, "squad: longest question kept, in wordpieces"),
    "max_answer_length": (30, "squad: longest answer, in wordpieces"),
    "null_score_threshold": (0.0, "squad 2.0: answer nothing when the [CLS] (null) score "
                                  "beats the best span's score by more than this; kbc "
                                  "evaluate reports the best one on labeled data"),
}
PLAIN_TEXT_SUFFIXES = ("", ".txt")


def add_data_options(parser, with_defaults=True):
    group = parser.add_argument_group("data")
    for name, (default, help_text) in DATA_OPTIONS.items():
        # Whole numbers (squad's lengths and stride) count wordpieces, at least 1; names
        # and delimiters are never empty.
        kind = {type(None): str, int: positive_int, str: non_empty}.get(type(default),
                                                                        type(default))
        if not with_defaults:
            default, help_text = None, help_text + " (default: as in training)"
        group.add_argument("--" + name.replace("_", "-"), type=kind, default=default,
                           help=help_text)


def data_settings(args):
    """The data options given on the command line (`None` ones left out)."""
    return {name: getattr(args, name) for name in DATA_OPTIONS
            if getattr(args, name) is not None}


def read_lines(path):
    """Non-empty lines of a file, or of stdin when `path` is None."""
    return [line for _, line in numbered_lines(path)]


def numbered_lines(path):
    """`(line number, line)` of the non-empty lines of a file, or of stdin when `path` is
    None: the numbers count every line, so that a message points at the file's own."""
    if path is None:
        lines = list(sys.stdin)
    else:
        with open(path, encoding="utf-8-sig") as f:  # a byte-order mark dropped
            lines = list(f)
    return [(number, line.rstrip("\n")) for number, line in enumerate(lines, start=1)
            if line.strip()]


def check_input_text(path, command="predict", purpose="nothing to predict"):
    """Checks that the input (a file, or stdin when `path` is None) is UTF-8 text with
    something in it; stdin, read whole, is put back as a text stream for the readers.
    TensorFlow and LiteRT would otherwise fail deep inside on such input. `command` and
    `purpose` word the errors for the command that reads it."""
    name = path or "standard input"
    if path is None:
        stdin = sys.stdin
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
    else:
        with open(path, "rb") as f:
            data = f.read()
    data = data.removeprefix(codecs.BOM_UTF8)  # a byte-order mark dropped, as from files
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(f"{name} is not UTF-8 text (line {line}: byte "
                        f"{data[e.start]:#04x}); {command} reads text") from None
    if "\0" in text:
        raise UserError(f"{name} is a binary file (it holds NUL bytes); {command} reads "
                        "text")
    if not text.strip():
        raise UserError(f"{name} is empty: {purpose}")
    if path is None:  # with Windows line ends read as "\n", as from files
        sys.stdin = io.StringIO(text, newline=None)


def task_for(name, settings):
    """The `fine_tuning.Task` named `name`, with `settings`."""
    from keras_bert_core.tasks.fine_tuning import TASKS

    return TASKS[name](settings)


def read_input(task, path):
    """Unlabeled data for `task`'s answers: a data file, or plain text lines (of `path` if
    it ends in .txt, else of stdin when `path` is None)."""
    if path is not None and os.path.splitext(path)[1] not in PLAIN_TEXT_SUFFIXES:
        return task.load(path, labeled=False)
    return task.from_lines(read_lines(path))


def load_tfds(task, name, split, data_dir=None):
    """A TensorFlow Datasets split, checked to fit `task`."""
    from keras_bert_core.tasks.tfds import TFDS_TASKS, load_tfds_task

    if name not in TFDS_TASKS:
        raise UserError(f"unknown TFDS task {name!r}; choose from {', '.join(TFDS_TASKS)}")
    source = f"TFDS {name!r} split {split!r}"
    try:
        data = load_tfds_task(name, split, data_dir=data_dir)
    except Exception as e:  # noqa: BLE001 - TFDS raises many kinds (missing data, network)
        lines = str(e).strip().splitlines()
        raise UserError(f"cannot load {source}: {lines[0] if lines else type(e).__name__}") \
            from None
    task.check_data(data, source)
    return data
