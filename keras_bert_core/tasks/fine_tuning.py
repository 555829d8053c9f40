"""The fine-tuning tasks as objects, as `kbc finetune`, `evaluate` and `predict` run them and
as Python runs them: each reads its data, builds its model, makes its `fit` batches, scores
and answers, from its `settings` (data columns, label names, lengths), which the model
carries (`TaskModel.task_settings`): `task_of(model)` is the task a fine-tuned model answers.

Example: a classifier built by its task answers from its settings alone (untrained here).
>>> import keras_bert_core as kbc
>>> from keras_bert_core.tasks.fine_tuning import Classify, task_of
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film"]
>>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> task = Classify({"label_names": ["bad", "good"], "seq_length": 16})
>>> model = task.build_model(encoder, kbc.BertPreprocessor(vocab, seq_length=16))
>>> task = task_of(model)  # e.g. of keras.saving.load_model("model.keras")
>>> [answer["label"] in ("bad", "good") for answer in
...  task.predict(model, task.from_lines(["a good film", "a bad film"]))]
[True, True]
"""

from keras_bert_core.errors import DataError

# The settings every task has, and their defaults (`kbc finetune`'s data options).
DEFAULT_SETTINGS = {
    "text_column": "text",
    "pair_column": "text_b",
    "label_column": "label",
    "question_column": "question",
    "choices_column": "choices",
    "context_column": None,
    "doc_stride": 128,
    "max_query_length": 64,
    "max_answer_length": 30,
    "null_score_threshold": 0.0,
}


def _preprocessor(model, preprocessor):
    """`preprocessor`, else the one the model carries."""
    if preprocessor is None and getattr(model, "preprocessor", None) is None:
        raise ValueError(f"{model.name!r} carries no preprocessor: pass the one it reads")
    return model.preprocessor if preprocessor is None else preprocessor


def task_of(model):
    """The `Task` a fine-tuned model answers, from its `task_settings`."""
    settings = getattr(model, "task_settings", None) or {}
    if settings.get("name") not in TASKS:
        raise ValueError(f"{type(model).__name__} {model.name!r} carries no fine-tuning task "
                         "settings (task_settings); build it with a task's build_model")
    return TASKS[settings["name"]](dict(settings))


class Task:
    """One fine-tuning task.

    The methods that read a model's inputs take the `preprocessor` the model reads (by
    default the model's own, `model.preprocessor`).

    Args:
        settings: dict of the task's data settings (`DEFAULT_SETTINGS`), `seq_length`,
            `lower_case`, and what `learn_labels` adds from the training data.
    """

    name = None

    def __init__(self, settings):
        self.settings = {**DEFAULT_SETTINGS, **settings, "name": self.name}

    def load(self, path, labeled=True):
        """The data of a file; without its labels if not `labeled`."""
        raise NotImplementedError

    def from_lines(self, lines):
        """Unlabeled data of text lines (pairs tab-separated; ner: words between spaces)."""
        raise DataError(f"{self.name} predictions read a data file: pass --input FILE")

    def check_data(self, data, source):
        """Raises a `DataError` if `data` (e.g. from TFDS) is not this task's kind."""

    def learn_labels(self, data):
        """Records what the model's shape depends on (label names, number of choices)."""

    def build_model(self, encoder, preprocessor=None):
        """The task's model on `encoder`, carrying `preprocessor` and the task's settings
        (`TaskModel.task_settings`), so that its `.keras` file answers by itself."""
        raise NotImplementedError

    def model_arguments(self, preprocessor):
        """What every task model is built with besides its encoder and head."""
        return {"preprocessor": preprocessor, "task_settings": dict(self.settings)}

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        """`(tf.data.Dataset, number of rows)`: `fit` batches of `data`, or features only
        when it is unlabeled."""
        raise NotImplementedError

    def evaluate(self, model, data, preprocessor=None, batch_size=32):
        """A dict of metrics of `model` on labeled `data`."""
        return self._evaluate(model, data, _preprocessor(model, preprocessor), batch_size)

    def predict(self, model, data, preprocessor=None, batch_size=32):
        """A list of JSON-ready answers of `model`, one per example of `data`."""
        return self._predict(model, data, _preprocessor(model, preprocessor), batch_size)

    def _evaluate(self, model, data, preprocessor, batch_size):
        """The model's compiled metrics on the task's batches; tasks scored on their
        answers (span QA, tagging) override it."""
        metrics = model.evaluate(self.dataset(data, preprocessor, batch_size)[0], verbose=0,
                                 return_dict=True)
        return {name: float(value) for name, value in metrics.items()}

    def _predict(self, model, data, preprocessor, batch_size):
        raise NotImplementedError

    def _outputs(self, model, data, preprocessor, batch_size):
        """The model's outputs on the task's batches of `data`."""
        return model.predict(self.dataset(data, preprocessor, batch_size)[0], verbose=0)

    def serving_requests(self, data, count):
        """The first `count` examples of `data` as an export's inputs: dicts keyed by its
        serving signature's text inputs (`kbc predict`'s JSON lines)."""
        raise NotImplementedError

    def null_score_threshold(self):
        """The margin by which "no answer" must win to be answered (SQuAD 2.0); None where
        the task has no such answer."""
        return None


class Classify(Task):
    """Labels a text (or, as `Pair`, a pair of texts); regression when there are no label
    names: the setting `regression` (files whose label is a score) or STS-B from TFDS."""

    name = "classify"
    pairs = False

    def load(self, path, labeled=True):
        from keras_bert_core.tasks.classification import load_text_classification

        s = self.settings
        return load_text_classification(
            path, s["text_column"], s["label_column"] if labeled else None,
            s["pair_column"] if self.pairs else None, label_names=s.get("label_names"),
            regression=s.get("regression", False))

    def from_lines(self, lines):
        from keras_bert_core.tasks.classification import TextClassificationData

        if not self.pairs:
            return TextClassificationData(lines, None, None, None)
        fields = [line.split("\t") for line in lines]
        for number, parts in enumerate(fields, start=1):
            if len(parts) != 2:
                raise DataError(f"input line {number}: expected two tab-separated texts, "
                                f"found {len(parts)} field(s)")
        return TextClassificationData([a for a, _ in fields], [b for _, b in fields], None,
                                      None)

    def check_data(self, data, source):
        from keras_bert_core.tasks.classification import TextClassificationData

        if not isinstance(data, TextClassificationData):
            raise DataError(f"{source} is not a classification task; "
                            f"choose the --task that fits it")
        if (data.pairs is not None) != self.pairs:
            wanted = "pair" if data.pairs is not None else "classify"
            raise DataError(f"{source} has {'text pairs' if data.pairs else 'single texts'}: "
                            f"use --task {wanted}")

    def serving_requests(self, data, count):
        if data.pairs is None:
            return [{"text": text} for text in data.texts[:count]]
        return [{"text_a": a, "text_b": b} for a, b in zip(data.texts[:count], data.pairs,
                                                            strict=False)]

    def learn_labels(self, data):
        self.settings["label_names"] = data.label_names

    def build_model(self, encoder, preprocessor=None):
        from keras_bert_core.models.classifier import BertClassifier

        names = self.settings["label_names"]
        return BertClassifier(encoder, num_classes=len(names) if names else 1,
                              **self.model_arguments(preprocessor))

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        from keras_bert_core.tasks.classification import classification_dataset

        return classification_dataset(data, preprocessor, batch_size, training,
                                      seed=seed), len(data)

    def _predict(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.classification import answers

        logits = self._outputs(model, data, preprocessor, batch_size)
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
            raise DataError(f"{source} is not a question-answering task; "
                            "choose the --task that fits it")

    def serving_requests(self, data, count):
        return [{"question": e.question, "context": e.context} for e in data[:count]]

    def learn_labels(self, data):
        # SQuAD 2.0: unanswerable questions exist, so "no answer" is a possible prediction.
        self.settings["version_2"] = any(example.is_impossible for example in data)

    def build_model(self, encoder, preprocessor=None):
        from keras_bert_core.models.span_labeler import BertSpanLabeler

        return BertSpanLabeler(encoder, **self.model_arguments(preprocessor))

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

    def _evaluate(self, model, data, preprocessor, batch_size):
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

    def _predict(self, model, data, preprocessor, batch_size):
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
            raise DataError(f"{source} is not a tagging task; choose the --task that fits it")

    def serving_requests(self, data, count):
        return [{"text": " ".join(words)} for words in data.sentences[:count]]

    def learn_labels(self, data):
        self.settings["label_names"] = data.tag_names

    def build_model(self, encoder, preprocessor=None):
        from keras_bert_core.models.token_classifier import BertTokenClassifier

        return BertTokenClassifier(encoder, num_classes=len(self.settings["label_names"]),
                                   **self.model_arguments(preprocessor))

    def _features(self, data, preprocessor):
        from keras_bert_core.tasks.token_classification import tagging_features

        return tagging_features(data, preprocessor.tokenizer, self.settings["seq_length"])

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        features = self._features(data, preprocessor)
        return features.dataset(batch_size, training, seed=seed), len(features)

    def _evaluate(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.token_classification import entity_scores

        names = self.settings["label_names"]
        truth = [[names[tag] for tag in sentence] for sentence in data.tags]
        answers = self.predict(model, data, preprocessor, batch_size)
        return entity_scores(truth, [answer["tags"] for answer in answers])

    def _predict(self, model, data, preprocessor, batch_size):
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
            raise DataError(f"{path}: questions have {data.num_choices} choices but the model "
                            f"was trained with {expected}")
        return data

    def serving_requests(self, data, count):
        return [{"text": question, "choices": list(choices)} for question, choices
                in zip(data.questions[:count], data.choices, strict=False)]

    def learn_labels(self, data):
        self.settings["num_choices"] = data.num_choices

    def build_model(self, encoder, preprocessor=None):
        from keras_bert_core.models.multiple_choice import BertMultipleChoice

        return BertMultipleChoice(encoder, num_choices=self.settings["num_choices"],
                                  **self.model_arguments(preprocessor))

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        from keras_bert_core.tasks.multiple_choice import multiple_choice_dataset

        return multiple_choice_dataset(data, preprocessor, batch_size, training,
                                       seed=seed), len(data)

    def _predict(self, model, data, preprocessor, batch_size):
        from keras_bert_core.tasks.multiple_choice import answers

        logits = self._outputs(model, data, preprocessor, batch_size)
        return [{"question": question, "choices": choices, **answer}
                for question, choices, answer in zip(data.questions, data.choices,
                                                     answers(logits, data.choices), strict=True)]


TASKS = {task.name: task for task in (Classify, Pair, Squad, Ner, Choice)}
