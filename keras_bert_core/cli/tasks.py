"""The fine-tuning tasks of `kbc finetune`, `evaluate` and `predict`, as the CLI runs them.

A CLI task takes its options, reads its data (files, plain text lines or TensorFlow Datasets),
builds its model on an encoder, and calls its `keras_bert_core.tasks` module for `fit`
batches, scores and answers. Its `settings` (columns, label names, lengths) are saved in the
run's config.json, so `evaluate` and `predict` read data exactly as training did.
"""

import os
import sys

from keras_bert_core.cli import UserError
from keras_bert_core.cli.model_building import MODEL_FILE, model_path, run_directory_of
from keras_bert_core.cli.run_dir import RunDirectory

# Task options and their defaults; `evaluate` and `predict` default to the training run's.
DATA_OPTIONS = {
    "text_column": ("text", "classify/pair: column of the (first) text"),
    "pair_column": ("text_b", "pair: column of the second text"),
    "label_column": ("label", "classify/pair/choice: column of the label"),
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
        kind = str if default is None else type(default)
        if not with_defaults:
            default, help_text = None, help_text + " (default: as in training)"
        group.add_argument("--" + name.replace("_", "-"), type=kind, default=default,
                           help=help_text)


def data_settings(args):
    """The data options given on the command line (`None` ones left out)."""
    return {name: getattr(args, name) for name in DATA_OPTIONS
            if getattr(args, name) is not None}


def _keras_metrics(model, dataset):
    metrics = model.evaluate(dataset, verbose=0, return_dict=True)
    return {name: float(value) for name, value in metrics.items()}


def read_lines(path):
    """Non-empty lines of a file, or of stdin when `path` is None."""
    if path is None:
        return [line.rstrip("\n") for line in sys.stdin if line.strip()]
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


class Task:
    """One fine-tuning task.

    Args:
        settings: dict of the task's data options (`DATA_OPTIONS`), `seq_length`, and what
            `learn_labels` adds from the training data.
    """

    name = None

    def __init__(self, settings):
        self.settings = {**{k: v for k, (v, _) in DATA_OPTIONS.items()}, **settings,
                         "name": self.name}

    def load(self, path, labeled=True):
        """The data of a file; without its labels if not `labeled`."""
        raise NotImplementedError

    def read_input(self, path):
        """Unlabeled data for `predict`: a data file, or plain text lines (of `path` if it
        ends in .txt, else of stdin when `path` is None)."""
        if path is not None and os.path.splitext(path)[1] not in PLAIN_TEXT_SUFFIXES:
            return self.load(path, labeled=False)
        return self.from_lines(read_lines(path))

    def from_lines(self, lines):
        raise UserError(f"{self.name} predictions read a data file: pass --input FILE")

    def check_data(self, data, source):
        """Raises a `UserError` if `data` (e.g. from TFDS) is not this task's kind."""

    def learn_labels(self, data):
        """Records what the model's shape depends on (label names, number of choices)."""

    def build_model(self, encoder):
        raise NotImplementedError

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        """`(tf.data.Dataset, number of rows)`: `fit` batches of `data`, or features only
        when it is unlabeled."""
        raise NotImplementedError

    def evaluate(self, model, data, preprocessor, batch_size):
        """A dict of metrics."""
        raise NotImplementedError

    def predict(self, model, data, preprocessor, batch_size):
        """A list of JSON-ready answers, one per example."""
        raise NotImplementedError

    def null_score_threshold(self):
        """The margin by which "no answer" must win to be answered (SQuAD 2.0); None where
        the task has no such answer."""
        return None


class Classify(Task):
    """Labels a text (or, as `Pair`, a pair of texts); regression when there are no label
    names (STS-B from TFDS)."""

    name = "classify"
    pairs = False

    def load(self, path, labeled=True):
        from keras_bert_core.tasks.classification import load_text_classification

        s = self.settings
        return load_text_classification(
            path, s["text_column"], s["label_column"] if labeled else None,
            s["pair_column"] if self.pairs else None, label_names=s.get("label_names"))

    def from_lines(self, lines):
        from keras_bert_core.tasks.classification import TextClassificationData

        if not self.pairs:
            return TextClassificationData(lines, None, None, None)
        fields = [line.split("\t") for line in lines]
        for number, parts in enumerate(fields, start=1):
            if len(parts) != 2:
                raise UserError(f"input line {number}: expected two tab-separated texts, "
                                f"found {len(parts)} field(s)")
        return TextClassificationData([a for a, _ in fields], [b for _, b in fields], None,
                                      None)

    def check_data(self, data, source):
        from keras_bert_core.tasks.classification import TextClassificationData

        if not isinstance(data, TextClassificationData):
            raise UserError(f"{source} is not a classification task; "
                            f"choose the --task that fits it")
        if (data.pairs is not None) != self.pairs:
            wanted = "pair" if data.pairs is not None else "classify"
            raise UserError(f"{source} has {'text pairs' if data.pairs else 'single texts'}: "
                            f"use --task {wanted}")

    def learn_labels(self, data):
        self.settings["label_names"] = data.label_names

    def build_model(self, encoder):
        from keras_bert_core.models.classifier import BertClassifier

        names = self.settings["label_names"]
        return BertClassifier(encoder, num_classes=len(names) if names else 1)

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        from keras_bert_core.tasks.classification import classification_dataset

        return classification_dataset(data, preprocessor, batch_size, training,
                                      seed=seed), len(data)

    def evaluate(self, model, data, preprocessor, batch_size):
        return _keras_metrics(model, self.dataset(data, preprocessor, batch_size)[0])

    def predict(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.classification import answers

        dataset, _ = self.dataset(data, preprocessor, batch_size)
        logits = model.predict(dataset, verbose=0)
        texts = [{"text": text, "text_b": data.pairs[index]} if self.pairs else {"text": text}
                 for index, text in enumerate(data.texts)]
        return [{**text, **answer} for text, answer
                in zip(texts, answers(logits, self.settings["label_names"]), strict=True)]


class Pair(Classify):
    name = "pair"
    pairs = True


class Squad(Task):
    """Extractive question answering on SQuAD v1.1 / v2.0 JSON."""

    name = "squad"

    def load(self, path, labeled=True):
        from keras_bert_core.tasks.question_answering import load_squad

        return load_squad(path)

    def check_data(self, data, source):
        if not isinstance(data, list):
            raise UserError(f"{source} is not a question-answering task; "
                            "choose the --task that fits it")

    def learn_labels(self, data):
        # SQuAD 2.0: unanswerable questions exist, so "no answer" is a possible prediction.
        self.settings["version_2"] = any(example.is_impossible for example in data)

    def build_model(self, encoder):
        from keras_bert_core.models.span_labeler import BertSpanLabeler

        return BertSpanLabeler(encoder)

    def _features(self, data, preprocessor):
        from keras_bert_core.tasks.question_answering import squad_features

        s = self.settings
        return squad_features(data, preprocessor.tokenizer, s["seq_length"], s["doc_stride"],
                              s["max_query_length"])

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        features = self._features(data, preprocessor)
        return features.dataset(batch_size, training, seed=seed), len(features)

    def _logits(self, model, data, preprocessor, batch_size):
        """`(features, start_logits, end_logits)` of `model` on `data`."""
        features = self._features(data, preprocessor)
        logits = model.predict(features.inputs, batch_size=batch_size, verbose=0)
        return features, logits["start_logits"], logits["end_logits"]

    def _answers(self, data, features, start_logits, end_logits):
        from keras_bert_core.tasks.question_answering import answers

        return answers(data, features, start_logits, end_logits,
                       max_answer_length=self.settings["max_answer_length"],
                       null_score_threshold=self.null_score_threshold())

    def null_score_threshold(self):
        """The run's `--null-score-threshold` for a SQuAD 2.0 model; None for SQuAD 1.1,
        whose model always answers its best span."""
        return self.settings["null_score_threshold"] if self.settings.get("version_2") else None

    def evaluate(self, model, data, preprocessor, batch_size):
        """Exact match and F1 of the answers kbc gives (no answer when `[CLS]` outscores the
        best span by more than `--null-score-threshold`, for a SQuAD 2.0 model). On data
        with unanswerable questions also the null-score threshold with the best F1, and the
        scores at it (see `best_null_score_threshold`)."""
        from keras_bert_core.tasks.question_answering import best_null_score_threshold
        from keras_bert_core.tasks.question_answering.scores import squad_metrics

        logits = self._logits(model, data, preprocessor, batch_size)
        answers = self._answers(data, *logits)
        metrics = squad_metrics({answer["id"]: answer["answer"] for answer in answers}, data)
        if any(example.is_impossible for example in data):
            best = best_null_score_threshold(
                data, *logits, max_answer_length=self.settings["max_answer_length"])
            metrics.update({"best_null_score_threshold": best["null_score_threshold"],
                            "exact_match_at_best_threshold": best["exact_match"],
                            "f1_at_best_threshold": best["f1"]})
        return metrics

    def predict(self, model, data, preprocessor, batch_size):
        # The answer text without its offsets: the output kbc predict has always given.
        return [{key: answer[key] for key in ("id", "question", "answer")}
                for answer in self._answers(
                    data, *self._logits(model, data, preprocessor, batch_size))]


class Ner(Task):
    """Token tagging (named entities) on CoNLL files: a word per line, its tag last."""

    name = "ner"

    def load(self, path, labeled=True):
        from keras_bert_core.tasks.token_classification import load_conll

        return load_conll(path, tag_names=self.settings.get("label_names"),
                          tag_column=-1 if labeled else None)

    def from_lines(self, lines):
        from keras_bert_core.tasks.token_classification import TaggingData

        return TaggingData([line.split() for line in lines], None, None)

    def check_data(self, data, source):
        from keras_bert_core.tasks.token_classification import TaggingData

        if not isinstance(data, TaggingData):
            raise UserError(f"{source} is not a tagging task; choose the --task that fits it")

    def learn_labels(self, data):
        self.settings["label_names"] = data.tag_names

    def build_model(self, encoder):
        from keras_bert_core.models.token_classifier import BertTokenClassifier

        return BertTokenClassifier(encoder, num_classes=len(self.settings["label_names"]))

    def _features(self, data, preprocessor):
        from keras_bert_core.tasks.token_classification import tagging_features

        return tagging_features(data, preprocessor.tokenizer, self.settings["seq_length"])

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        features = self._features(data, preprocessor)
        return features.dataset(batch_size, training, seed=seed), len(features)

    def evaluate(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.token_classification import entity_scores

        names = self.settings["label_names"]
        truth = [[names[tag] for tag in sentence] for sentence in data.tags]
        answers = self.predict(model, data, preprocessor, batch_size)
        return entity_scores(truth, [answer["tags"] for answer in answers])

    def predict(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.token_classification import answers

        features = self._features(data, preprocessor)
        logits = model.predict(features.inputs, batch_size=batch_size, verbose=0)
        return answers(data, features, logits, self.settings["label_names"])


class Choice(Task):
    """Multiple choice on JSON lines: a question, a list of choices, the right one's index."""

    name = "choice"

    def load(self, path, labeled=True):
        from keras_bert_core.tasks.multiple_choice import load_multiple_choice

        s = self.settings
        data = load_multiple_choice(path, s["question_column"], s["choices_column"],
                                    s["label_column"] if labeled else None,
                                    s["context_column"])
        expected = s.get("num_choices")
        if expected is not None and data.num_choices != expected:
            raise UserError(f"{path}: questions have {data.num_choices} choices but the model "
                            f"was trained with {expected}")
        return data

    def learn_labels(self, data):
        self.settings["num_choices"] = data.num_choices

    def build_model(self, encoder):
        from keras_bert_core.models.multiple_choice import BertMultipleChoice

        return BertMultipleChoice(encoder, num_choices=self.settings["num_choices"])

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        from keras_bert_core.tasks.multiple_choice import multiple_choice_dataset

        return multiple_choice_dataset(data, preprocessor, batch_size, training,
                                       seed=seed), len(data)

    def evaluate(self, model, data, preprocessor, batch_size):
        return _keras_metrics(model, self.dataset(data, preprocessor, batch_size)[0])

    def predict(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.multiple_choice import answers

        dataset, _ = self.dataset(data, preprocessor, batch_size)
        logits = model.predict(dataset, verbose=0)
        return [{"question": question, "choices": choices, **answer}
                for question, choices, answer in zip(data.questions, data.choices,
                                                     answers(logits, data.choices), strict=True)]


TASKS = {task.name: task for task in (Classify, Pair, Squad, Ner, Choice)}


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


def load_finetuned(path):
    """`(model, task, preprocessor)` of a `kbc finetune` run, given its folder or model, or
    of a preset folder (`keras_bert_core.presets`)."""
    from keras_bert_core.checkpoints.keras_file import load_model
    from keras_bert_core.presets import is_preset
    from keras_bert_core.text import BertPreprocessor

    if is_preset(path):
        return _load_preset(path)
    folder = run_directory_of(path)
    if folder is None:
        raise UserError(f"{path} is not a kbc fine-tuning run: its folder has no config.json "
                        "with the task settings")
    try:
        config = RunDirectory.open(folder).config()
        command = config["command"]
    except (ValueError, KeyError, TypeError):  # another tool's config.json (e.g. Hugging Face)
        raise UserError(f"{folder} is not a kbc run: its config.json was not written by "
                        "kbc") from None
    if not config.get("task"):
        raise UserError(f"{folder} is a `kbc {command}` run, not a fine-tuned model")
    if os.path.isdir(path) and not os.path.isfile(os.path.join(folder, MODEL_FILE)):
        raise UserError(f"{folder} has not finished training (it has no {MODEL_FILE}); "
                        f"continue it with `kbc finetune --resume --run-dir {folder}`")
    task = TASKS[config["task"]["name"]](config["task"])
    model = load_model(model_path(path))
    # The run's vocabulary files, of whichever kind (runs saved before other kinds: vocab.txt).
    try:
        preprocessor = BertPreprocessor(folder, seq_length=task.settings["seq_length"],
                                        lower_case=task.settings["lower_case"])
    except ValueError as e:
        raise UserError(f"{folder}: {e}" if folder not in str(e) else str(e)) from None
    return model, task, preprocessor


def _load_preset(path):
    """`(model, task, preprocessor)` of a preset folder that holds a task model."""
    from keras_bert_core.presets import from_preset, read_preset

    settings = read_preset(path).get("task")
    if not settings or settings.get("name") not in TASKS:
        raise UserError(f"{path} is a preset of an encoder, not of a fine-tuned model; "
                        f"fine-tune it first: kbc finetune --checkpoint {path} ...")
    model, preprocessor = from_preset(path)
    return model, TASKS[settings["name"]](settings), preprocessor
