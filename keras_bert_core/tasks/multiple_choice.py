"""Multiple choice: a question (and an optional passage) with candidate answers
(`BertMultipleChoice`).

`load_multiple_choice` reads JSON lines into `MultipleChoiceData`; `multiple_choice_dataset`
turns it into `fit` batches of `[batch, num_choices, seq_length]`; `answers` turns the model's
logits into the chosen index, its text and the probabilities; `MultipleChoice` serves the
model from raw text; `Choice` is the task `kbc finetune --task choice` runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError
from keras_bert_core.models.encoder import INPUT_NAMES
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.tasks.classification import Classification, softmax
from keras_bert_core.tasks.records import (
    field,
    read_records,
    static_shape,
    text_batches,
    text_field,
)
from keras_bert_core.tasks.serving import EXAMPLE_TEXTS
from keras_bert_core.tasks.task import Task


@dataclasses.dataclass
class MultipleChoiceData:
    """Multiple-choice questions, each with the same number of choices.

    Args:
        questions: the question (or sentence start) of each example.
        choices: one list of `num_choices` candidate answers per example.
        labels: int32 `[num_examples]` index of the correct choice; `None` for unlabeled data.
        contexts: an optional passage per example (reading comprehension), or `None`.

    Example:
    >>> data = MultipleChoiceData(["The sky is"], [["blue", "green"]], np.array([0], "int32"))
    >>> data.num_choices, data.text_pairs()
    (2, (['The sky is', 'The sky is'], ['blue', 'green']))
    """

    questions: list
    choices: list
    labels: np.ndarray | None
    contexts: list | None = None

    def __len__(self):
        return len(self.questions)

    @property
    def num_choices(self):
        return len(self.choices[0])

    def text_pairs(self):
        """The `(first, second)` text pair fed to the encoder for every choice, flattened.

        Without a context the pair is `(question, choice)`; with one it is
        `(context, question + " " + choice)`, so the passage never shares a segment with
        the candidate it is judged against.
        """
        firsts, seconds = [], []
        for index, (question, choices) in enumerate(zip(self.questions, self.choices,
                                                        strict=True)):
            for choice in choices:
                if self.contexts is None:
                    firsts.append(question)
                    seconds.append(choice)
                else:
                    firsts.append(self.contexts[index])
                    seconds.append(f"{question} {choice}".strip())
        return firsts, seconds


def load_multiple_choice(path, question_column="question", choices_column="choices",
                         label_column="label", context_column=None):
    """Reads multiple-choice questions from a JSON-lines file.

    Every line holds a question, a list of choices and the index of the right one, e.g.
    `{"question": "The sky is", "choices": ["blue", "green"], "label": 0}`.

    Args:
        path: the `.jsonl` file.
        question_column: key of the question text.
        choices_column: key of the list of choice texts; every line needs as many as the first.
        label_column: key of the 0-based index of the correct choice; `None` for unlabeled data.
        context_column: key of an optional passage the question is about.

    Returns:
        A `MultipleChoiceData`.

    Raises:
        DataError: naming the file, line and key of a missing key, a choice list of the wrong
            length or type, a label that is not a valid choice index, or a malformed line.

    Example:
    >>> import os
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "mc.jsonl")
    >>> _ = open(path, "w").write('{"question": "Sky?", "choices": ["blue", "red"], "label": 0}\\n')
    >>> data = load_multiple_choice(path)
    >>> data.num_choices, data.labels.tolist()
    (2, [0])
    """
    questions, choices, labels, contexts = [], [], [], []
    for line, record in read_records(path, "jsonl"):
        questions.append(text_field(record, question_column, path, line))
        options = field(record, choices_column, path, line)
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise DataError("expected a list of choice texts", path=path, line=line,
                            column=choices_column)
        if len(options) < 2 or (choices and len(options) != len(choices[0])):
            expected = len(choices[0]) if choices else "at least 2"
            raise DataError(f"expected {expected} choices, found {len(options)}",
                            path=path, line=line, column=choices_column)
        choices.append(options)
        if context_column is not None:
            contexts.append(text_field(record, context_column, path, line))
        if label_column is not None:
            label = field(record, label_column, path, line)
            if isinstance(label, str) and label.strip().isdigit():
                label = int(label)
            if isinstance(label, bool) or not isinstance(label, int) or not (
                    0 <= label < len(options)):
                raise DataError(f"label must be a choice index in [0, {len(options)}), "
                                f"got {label!r}", path=path, line=line, column=label_column)
            labels.append(label)
    if not questions:
        raise DataError("no records", path=path)
    return MultipleChoiceData(questions, choices,
                              np.array(labels, np.int32) if label_column is not None else None,
                              contexts if context_column is not None else None)


def multiple_choice_dataset(data, preprocessor, batch_size=16, training=False,
                            shuffle_buffer=10_000, seed=None):
    """A `tf.data.Dataset` of `(features [B, C, T], labels [B])` for `BertMultipleChoice`.

    Each choice is packed with its question (see `MultipleChoiceData.text_pairs`), the
    `B * C` pairs go through the preprocessor together and come back as `[B, C, T]`.

    Args:
        data: a `MultipleChoiceData`.
        preprocessor: a `BertPreprocessor`.
        batch_size: questions per batch.
        training: shuffle and drop the last partial batch (static shapes).
        shuffle_buffer: questions held by the shuffle buffer when training.
        seed: shuffle seed.

    Example:
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "sky", "blue", "red"]
    >>> data = MultipleChoiceData(["sky"], [["blue", "red"]], np.array([0], "int32"))
    >>> pre = BertPreprocessor(vocab, seq_length=8)
    >>> features, labels = next(iter(multiple_choice_dataset(data, pre, batch_size=1)))
    >>> features["token_ids"].numpy().tolist()
    [[[2, 5, 3, 6, 3, 0, 0, 0], [2, 5, 3, 7, 3, 0, 0, 0]]]
    """
    num_choices = data.num_choices
    firsts, seconds = data.text_pairs()
    columns = (np.reshape(firsts, [-1, num_choices]), np.reshape(seconds, [-1, num_choices]))

    def preprocess(pairs):
        features = preprocessor(tuple(tf.reshape(texts, [-1]) for texts in pairs),
                                static_shape=static_shape(training))
        # Static sequence length (training) stays static through the reshape.
        return {name: tf.reshape(value, [-1, num_choices, value.shape[-1] or tf.shape(value)[-1]])
                for name, value in features.items()}

    return text_batches(columns, data.labels, preprocess, batch_size, training,
                        shuffle_buffer, seed)


def answers(logits, choices, decimals=6):
    """A fine-tuned `BertMultipleChoice`'s answers: the chosen index, its text, the
    probabilities of every choice.

    Args:
        logits: `[num_examples, num_choices]`, e.g. `model.predict(features)`.
        choices: per example, its list of choice texts (`MultipleChoiceData.choices`).
        decimals: probabilities are rounded to this many decimals; `None` keeps them whole.

    Returns:
        One JSON-ready dict per example: `{"answer": index, "choice": text,
        "probabilities": [p, ...]}`.

    Example:
    >>> answers([[0.1, 2.0]], [["green", "blue"]], decimals=3)
    [{'answer': 1, 'choice': 'blue', 'probabilities': [0.13, 0.87]}]
    """
    results = []
    for probabilities, options in zip(softmax(logits), choices, strict=True):
        chosen = int(probabilities.argmax())
        rounded = probabilities if decimals is None else probabilities.round(decimals)
        results.append({"answer": chosen, "choice": options[chosen],
                        "probabilities": rounded.tolist()})
    return results


class MultipleChoice(Classification):
    """`BertMultipleChoice`: inputs `text` [batch] and `choices` [batch, num_choices].

    Args:
        num_choices: candidates per example, as the model was built.

    Example:
    >>> task = MultipleChoice(num_choices=2)
    >>> task.text_inputs, task.text_specs()["choices"].shape
    (('text', 'choices'), TensorShape([None, 2]))
    """

    text_inputs = ("text", "choices")

    def __init__(self, num_choices):
        super().__init__(pairs=True)
        self.num_choices = num_choices

    def text_specs(self):
        return {"text": tf.TensorSpec([None], tf.string, name="text"),
                "choices": tf.TensorSpec([None, self.num_choices], tf.string, name="choices")}

    def ids_specs(self, seq_length=None):
        return {name: tf.TensorSpec([None, self.num_choices, seq_length], tf.int32, name=name)
                for name in INPUT_NAMES}

    def example_inputs(self, batch_size=1):
        choices = [f"Choice {i}: {EXAMPLE_TEXTS['choices']}".encode()
                   for i in range(self.num_choices)]
        return {"text": np.array([EXAMPLE_TEXTS["text"].encode()] * batch_size, dtype=object),
                "choices": np.array([choices] * batch_size, dtype=object)}

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        # One (text, choice) row per choice, example-major like `choices` itself.
        text = tf.reshape(tf.tile(tf.expand_dims(texts["text"], 1), [1, self.num_choices]), [-1])
        rows = preprocessor((text, tf.reshape(texts["choices"], [-1])),
                            static_shape=static_shape)
        return {name: tf.reshape(value, [-1, self.num_choices, tf.shape(value)[-1]])
                for name, value in rows.items()}, None


class Choice(Task):
    """Multiple choice on JSON lines: a question, a list of choices, the right one's index."""

    name = "choice"

    def load(self, path, labeled=True):
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
        return BertMultipleChoice(encoder, num_choices=self.settings["num_choices"],
                                  **self.model_arguments(preprocessor))

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        return multiple_choice_dataset(data, preprocessor, batch_size, training,
                                       seed=seed), len(data)

    def _predict(self, model, data, preprocessor, batch_size):
        logits = self._outputs(model, data, preprocessor, batch_size)
        return [{"question": question, "choices": choices, **answer}
                for question, choices, answer in zip(data.questions, data.choices,
                                                     answers(logits, data.choices), strict=True)]
