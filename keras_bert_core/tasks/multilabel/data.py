"""Multi-label data: texts with a set of labels each, from CSV, TSV or JSON lines, and their
`fit` batches."""

from __future__ import annotations

import dataclasses

import numpy as np

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.records import (
    field,
    read_records,
    static_shape,
    text_batches,
    text_field,
)

DEFAULT_DELIMITER = ","


@dataclasses.dataclass
class MultiLabelData:
    """Texts with any number of labels each.

    Args:
        texts: one text per example.
        labels: float32 multi-hot `[num_examples, num_labels]` (1 where the text has the
            label), or `None` for unlabeled data.
        label_names: the label vocabulary: column `i` of `labels` is `label_names[i]`.

    Example:
    >>> data = MultiLabelData(["fast and cheap", "slow"], np.array([[1, 1], [0, 0]], "float32"),
    ...                       ["cheap", "fast"])
    >>> len(data), data.label_sets()
    (2, [['cheap', 'fast'], []])
    """

    texts: list
    labels: np.ndarray | None
    label_names: list | None

    def __len__(self):
        return len(self.texts)

    def label_sets(self):
        """Each example's labels by name, in vocabulary order."""
        return [[self.label_names[index] for index in np.flatnonzero(row)]
                for row in self.labels]


def _split_labels(value, delimiter, path, line, column):
    """A record's labels: a JSON list, or text with `delimiter` between labels (an empty
    text: no labels)."""
    if isinstance(value, list):
        labels = value
    elif isinstance(value, str):
        labels = value.split(delimiter) if value.strip() else []
    else:
        raise DataError(f"expected a list of labels or text, got {type(value).__name__} "
                        f"{value!r}", path=path, line=line, column=column)
    names = []
    for label in labels:
        if isinstance(label, bool) or not isinstance(label, (str, int)):
            raise DataError(f"a label must be text, got {type(label).__name__} {label!r}",
                            path=path, line=line, column=column)
        name = str(label).strip()
        if not name:
            raise DataError(f"empty label in {value!r} (labels are separated by "
                            f"{delimiter!r}: --label-delimiter)", path=path, line=line,
                            column=column)
        names.append(name)
    return names


def load_multilabel(path, text_column="text", label_column="label",
                    label_delimiter=DEFAULT_DELIMITER, label_names=None, file_format=None):
    """Reads a multi-label file: CSV or TSV, whose label column holds the labels joined by
    `label_delimiter` ("" for none), or JSON lines, whose label key holds a list of labels
    (or such text).

    Args:
        path: the file.
        text_column: column of the text.
        label_column: column of the labels; `None` for unlabeled data.
        label_delimiter: what separates the labels in a text field.
        label_names: the label vocabulary, in column order. A label outside it is an error.
            `None` builds it from the file: the distinct labels, sorted. Pass it for
            evaluation files, so that columns match the training file's.
        file_format: `"csv"`, `"tsv"` or `"jsonl"`; `None` picks it from the extension.

    Returns:
        A `MultiLabelData`.

    Raises:
        DataError: naming the file, line and column of a missing column, an empty label,
            a label outside `label_names`, a malformed line, or an empty file.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.csv")
    >>> _ = open(path, "w").write('text,label\\nfast cheap phone,"fast,cheap"\\nslow,\\n')
    >>> data = load_multilabel(path)
    >>> data.label_names, data.labels.tolist()
    (['cheap', 'fast'], [[1.0, 1.0], [0.0, 0.0]])
    """
    if not label_delimiter:
        raise ValueError("label_delimiter must not be empty")
    texts, sets = [], []
    known = None if label_names is None else {str(name) for name in label_names}
    for line, record in read_records(path, file_format):
        texts.append(text_field(record, text_column, path, line))
        if label_column is None:
            continue
        labels = _split_labels(field(record, label_column, path, line), label_delimiter,
                               path, line, label_column)
        unknown = [label for label in labels if known is not None and label not in known]
        if unknown:
            raise DataError(f"unknown label {unknown[0]!r}; expected one of "
                            f"{list(label_names)}", path=path, line=line, column=label_column)
        sets.append(labels)
    if not texts:
        raise DataError("no records", path=path)
    if label_column is None:
        return MultiLabelData(texts, None, None)
    names = [str(name) for name in label_names] if label_names is not None else sorted(
        {label for labels in sets for label in labels})
    if not names:
        raise DataError("no labels in any record (a multi-label task needs at least one)",
                        path=path, column=label_column)
    return MultiLabelData(texts, multi_hot(sets, names), names)


def multi_hot(label_sets, label_names):
    """float32 `[len(label_sets), len(label_names)]`: 1 where a set holds the name.

    Example:
    >>> multi_hot([["b"], ["a", "b"], []], ["a", "b"]).tolist()
    [[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    """
    column = {name: index for index, name in enumerate(label_names)}
    labels = np.zeros([len(label_sets), len(label_names)], np.float32)
    for row, names in enumerate(label_sets):
        labels[row, [column[name] for name in names]] = 1.0
    return labels


def multilabel_dataset(data, preprocessor, batch_size=32, training=False,
                       shuffle_buffer=10_000, seed=None):
    """A `tf.data.Dataset` of `(features, multi-hot labels)` batches (features only when
    `data.labels` is None), as `classification_dataset` makes them.

    Example:
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fast", "phone"]
    >>> data = MultiLabelData(["fast phone"], np.array([[0, 1]], "float32"), ["cheap", "fast"])
    >>> features, labels = next(iter(multilabel_dataset(
    ...     data, BertPreprocessor(vocab, seq_length=8), batch_size=1)))
    >>> features["token_ids"].numpy().tolist(), labels.numpy().tolist()
    ([[2, 5, 6, 3, 0, 0, 0, 0]], [[0.0, 1.0]])
    """
    return text_batches(data.texts, data.labels,
                        lambda texts: preprocessor(texts, static_shape=static_shape(training)),
                        batch_size, training, shuffle_buffer, seed)
