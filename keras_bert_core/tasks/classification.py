"""Text classification, of single texts and of pairs, regression included (`BertClassifier`).

`load_text_classification` reads a CSV, TSV or JSON-lines file into `TextClassificationData`
(`keras_bert_core.tasks.tfds` reads GLUE); `classification_dataset` turns it into `fit`
batches; `answers` turns the classifier's logits into label names and probabilities (or
scores); `Classification` and `Regression` serve the model from raw text; `Classify` and
`Pair` are the tasks `kbc finetune --task classify|pair` runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.tasks.records import (
    field,
    read_records,
    static_shape,
    text_batches,
    text_field,
)
from keras_bert_core.tasks.serving import ServingTask
from keras_bert_core.tasks.task import Task


def _label_key(value):
    """Labels compare as strings, so `1` in JSON and `"1"` in CSV are the same label."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _label_vocabulary(keys):
    """Sorted, numerically when every label is an integer (so "10" follows "9")."""
    unique = set(keys)
    if all(key.lstrip("-").isdigit() for key in unique):
        return sorted(unique, key=int)
    return sorted(unique)


@dataclasses.dataclass
class TextClassificationData:
    """Texts (and optional second texts) with integer labels.

    Args:
        texts: the first (or only) text of each example.
        pairs: the second text of each example, or `None` for single-text tasks.
        labels: int32 `[num_examples]` indices into `label_names`; float32 for regression
            (then `label_names` is `None`); `None` for unlabeled data.
        label_names: the label vocabulary: `label_names[i]` is the name of label `i`.

    Example:
    >>> data = TextClassificationData(["good", "bad"], None, np.array([1, 0], "int32"),
    ...                               ["neg", "pos"])
    >>> len(data), data.label_names[data.labels[0]]
    (2, 'pos')
    """

    texts: list
    pairs: list | None
    labels: np.ndarray | None
    label_names: list | None

    def __len__(self):
        return len(self.texts)


def load_text_classification(path, text_column="text", label_column="label", pair_column=None,
                             label_names=None, file_format=None, regression=False):
    """Reads a classification file (CSV, TSV or JSON lines) with named columns.

    Args:
        path: the file.
        text_column: column holding the (first) text.
        label_column: column holding the label; `None` for unlabeled data.
        pair_column: column holding the second text of sentence-pair tasks.
        label_names: the label vocabulary, in id order. A label outside it is an error. `None`
            builds it from the file: the distinct labels, sorted (numerically if all integers).
            Pass it for evaluation files so ids match the training file's.
        file_format: `"csv"`, `"tsv"` or `"jsonl"`; `None` picks it from the extension.
        regression: the label is a number (a score, as STS-B's): float32 labels and no
            `label_names`.

    Returns:
        A `TextClassificationData`.

    Raises:
        DataError: naming the file, line and column of a missing column, a missing value,
            a label outside `label_names` (or not a number, for `regression`), a malformed
            line, or an empty file.

    Example:
    >>> import os
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.jsonl")
    >>> _ = open(path, "w").write('{"text": "great", "label": "pos"}\\n'
    ...                           '{"text": "dull", "label": "neg"}\\n')
    >>> data = load_text_classification(path)
    >>> data.texts, data.labels.tolist(), data.label_names
    (['great', 'dull'], [1, 0], ['neg', 'pos'])
    """
    if label_names is not None:
        label_names = [_label_key(name) for name in label_names]
    texts, pairs, keys = [], [], []
    for line, record in read_records(path, file_format):
        texts.append(text_field(record, text_column, path, line))
        if pair_column is not None:
            pairs.append(text_field(record, pair_column, path, line))
        if label_column is None:
            continue
        key = _label_key(field(record, label_column, path, line))
        if not key.strip():
            raise DataError("empty label", path=path, line=line, column=label_column)
        if label_names is not None and key not in label_names:
            raise DataError(f"unknown label {key!r}; expected one of {label_names}",
                            path=path, line=line, column=label_column)
        if regression:
            key = _score(key, path, line, label_column)
        keys.append(key)
    if not texts:
        raise DataError("no records", path=path)
    pairs = pairs if pair_column is not None else None
    if label_column is None:
        return TextClassificationData(texts, pairs, None, None)
    if regression:
        return TextClassificationData(texts, pairs, np.array(keys, np.float32), None)
    label_names = label_names or _label_vocabulary(keys)
    ids = {name: index for index, name in enumerate(label_names)}
    return TextClassificationData(texts, pairs, np.array([ids[key] for key in keys], np.int32),
                                  label_names)


def _score(key, path, line, column):
    try:
        return float(key)
    except ValueError:
        raise DataError(f"label {key!r} is not a number (a regression task's label is a "
                        "score)", path=path, line=line, column=column) from None


def classification_dataset(data, preprocessor, batch_size=32, training=False,
                           shuffle_buffer=10_000, seed=None):
    """A `tf.data.Dataset` of `(features, labels)` batches for `BertClassifier`.

    Args:
        data: a `TextClassificationData`.
        preprocessor: a `BertPreprocessor` (strings, or `(first, second)` pairs -> features).
        batch_size: examples per batch.
        training: shuffle, and drop the last partial batch so every batch has the same
            static shape.
        shuffle_buffer: examples held by the shuffle buffer when training.
        seed: shuffle seed.

    Returns:
        Batches of `({"token_ids", "segment_ids", "padding_mask"}, labels)`; features only
        when `data.labels` is `None`.

    Example:
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
    >>> data = TextClassificationData(["good film", "bad film"], None,
    ...                               np.array([1, 0], "int32"), ["neg", "pos"])
    >>> ds = classification_dataset(data, BertPreprocessor(vocab, seq_length=8), batch_size=2)
    >>> features, labels = next(iter(ds))
    >>> features["token_ids"].numpy().tolist(), labels.numpy().tolist()
    ([[2, 5, 7, 3, 0, 0, 0, 0], [2, 6, 7, 3, 0, 0, 0, 0]], [1, 0])
    """
    columns = data.texts if data.pairs is None else (data.texts, data.pairs)
    return text_batches(columns, data.labels,
                        lambda texts: preprocessor(texts, static_shape=static_shape(training)),
                        batch_size, training, shuffle_buffer, seed)


def softmax(logits):
    """Probabilities over the last axis, in float64 (numpy).

    Example:
    >>> softmax([[0.0, 0.0], [0.0, np.log(3.0)]]).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    logits = np.asarray(logits, np.float64)
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def answers(logits, label_names=None, decimals=6):
    """A fine-tuned `BertClassifier`'s answers: label names and probabilities, or scores.

    Args:
        logits: `[num_examples, num_classes]`, e.g. `model.predict(features)`.
        label_names: the class names, index = class id (`TextClassificationData.label_names`
            of the training data). `None` for a regression model (one output).
        decimals: probabilities are rounded to this many decimals; `None` keeps them whole.

    Returns:
        One JSON-ready dict per example: `{"label": name, "probabilities": {name: p, ...}}`,
        or `{"score": float}` for regression.

    Example:
    >>> answers([[0.2, 2.5]], ["negative", "positive"], decimals=3)
    [{'label': 'positive', 'probabilities': {'negative': 0.091, 'positive': 0.909}}]
    >>> answers([[3.75]])  # a regression model, e.g. STS-B similarity
    [{'score': 3.75}]
    """
    logits = np.asarray(logits)
    if not label_names:
        return [{"score": float(row[0])} for row in logits]
    if logits.shape[-1] != len(label_names):
        raise ValueError(f"logits have {logits.shape[-1]} classes but label_names has "
                         f"{len(label_names)} names")
    results = []
    for probabilities in softmax(logits):
        rounded = probabilities if decimals is None else probabilities.round(decimals)
        results.append({"label": label_names[int(probabilities.argmax())],
                        "probabilities": dict(zip(label_names, rounded.tolist(), strict=True))})
    return results


class Classification(ServingTask):
    """Probabilities, label index and (given `label_names`) label name of a classifier.

    Args:
        label_names: optional class names, index = class id.
        pairs: see `ServingTask`.

    Example:
    >>> outputs = Classification(["no", "yes"]).outputs(tf.constant([[0.0, 2.0]]), None)
    >>> outputs["label"].numpy().tolist(), outputs["label_name"].numpy().tolist()
    ([1], [b'yes'])
    """

    pooled = True

    def __init__(self, label_names=None, pairs=False):
        super().__init__(pairs)
        self.label_names = label_names

    def outputs(self, logits, features):
        label = tf.argmax(logits, axis=-1, output_type=tf.int32)
        outputs = {"logits": logits, "probabilities": tf.nn.softmax(logits), "label": label}
        if self.label_names is not None:
            outputs["label_name"] = tf.gather(tf.constant(self.label_names), label)
        return outputs


class Regression(ServingTask):
    """The score of a one-output `BertClassifier` (e.g. STS-B similarity).

    Example:
    >>> Regression().outputs(tf.constant([[0.5], [4.0]]), None)["score"].numpy().tolist()
    [0.5, 4.0]
    """

    pooled = True

    def outputs(self, logits, features):
        return {"score": logits[:, 0]}


class Classify(Task):
    """Labels a text (or, as `Pair`, a pair of texts); regression when there are no label
    names: the setting `regression` (files whose label is a score) or STS-B from TFDS."""

    name = "classify"
    pairs = False

    def load(self, path, labeled=True):
        s = self.settings
        return load_text_classification(
            path, s["text_column"], s["label_column"] if labeled else None,
            s["pair_column"] if self.pairs else None, label_names=s.get("label_names"),
            regression=s.get("regression", False))

    def from_lines(self, lines):
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
        names = self.settings["label_names"]
        return BertClassifier(encoder, num_classes=len(names) if names else 1,
                              window_aggregation=self.window_aggregation(),
                              **self.model_arguments(preprocessor))

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        return classification_dataset(data, preprocessor, batch_size, training,
                                      seed=seed), len(data)

    def _predict(self, model, data, preprocessor, batch_size):
        logits = self._outputs(model, data, preprocessor, batch_size)
        texts = [{"text": text, "text_b": data.pairs[index]} if self.pairs else {"text": text}
                 for index, text in enumerate(data.texts)]
        return [{**text, **answer} for text, answer
                in zip(texts, answers(logits, self.settings["label_names"]), strict=True)]


class Pair(Classify):
    name = "pair"
    pairs = True
