"""Fine-tuning data from user files: text classification and multiple choice.

CSV, TSV and JSON-lines files are read into plain Python lists (`TextClassificationData`,
`MultipleChoiceData`); `classification_dataset` and `multiple_choice_dataset` turn them into
`tf.data` pipelines of `(features, labels)` through a `BertPreprocessor`. Anything wrong in a
file raises `DataError`, which names the file, the line and the column at fault.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}


def read_records(path, file_format=None):
    """Yields `(line_number, record_dict)` from a CSV, TSV or JSON-lines file.

    CSV and TSV files need a header row. TSV fields are taken literally (no quoting), as in
    GLUE's files. Blank JSON lines are skipped.

    Args:
        path: the file.
        file_format: `"csv"`, `"tsv"` or `"jsonl"`; `None` picks it from the file extension.

    Example:
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.csv")
    >>> _ = open(path, "w").write("text,label\\ngood film,pos\\n")
    >>> list(read_records(path))
    [(2, {'text': 'good film', 'label': 'pos'})]
    """
    path = os.fspath(path)
    if file_format is None:
        extension = os.path.splitext(path)[1].lower()
        if extension not in _FORMATS:
            raise DataError(f"cannot tell the format from the extension {extension!r}; pass "
                            f"file_format= one of 'csv', 'tsv', 'jsonl'", path=path)
        file_format = _FORMATS[extension]
    if file_format not in ("csv", "tsv", "jsonl"):
        raise ValueError(f"file_format must be 'csv', 'tsv' or 'jsonl', got {file_format!r}")
    if not os.path.exists(path):
        raise DataError("no such file", path=path)
    if os.path.getsize(path) == 0:
        raise DataError("the file is empty", path=path)
    try:
        if file_format == "jsonl":
            yield from _read_jsonl(path)
        else:
            yield from _read_delimited(path, file_format)
    except UnicodeDecodeError as error:
        raise DataError(f"not UTF-8 text: {error.reason} at byte {error.start} of a line",
                        path=path) from None


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"malformed JSON at character {error.colno}: {error.msg}",
                                path=path, line=line_number) from None
            if not isinstance(record, dict):
                raise DataError(f"expected a JSON object, got {type(record).__name__}",
                                path=path, line=line_number)
            yield line_number, record


def _read_delimited(path, file_format):
    options = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if file_format == "tsv" else {}
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, **options)
        try:
            header = reader.fieldnames
            if not header:
                raise DataError("no header row", path=path, line=1)
            for row in reader:
                # DictReader files surplus fields under None and fills missing ones with None.
                if None in row or None in row.values():
                    found = sum(value is not None for key, value in row.items()
                                if key is not None) + len(row.get(None, ()))
                    raise DataError(f"expected {len(header)} fields ({', '.join(header)}), "
                                    f"found {found}", path=path, line=reader.line_num)
                yield reader.line_num, row
        except csv.Error as error:
            raise DataError(f"malformed {file_format.upper()}: {error}",
                            path=path, line=reader.line_num) from None


def _field(record, column, path, line):
    if column not in record or record[column] is None:
        raise DataError(f"missing (the record has {', '.join(map(repr, record)) or 'nothing'})",
                        path=path, line=line, column=column)
    return record[column]


def _text_field(record, column, path, line):
    value = _field(record, column, path, line)
    if not isinstance(value, str):
        raise DataError(f"expected text, got {type(value).__name__} {value!r}",
                        path=path, line=line, column=column)
    return value


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
                             label_names=None, file_format=None):
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

    Returns:
        A `TextClassificationData`.

    Raises:
        DataError: naming the file, line and column of a missing column, a missing value,
            a label outside `label_names`, a malformed line, or an empty file.

    Example:
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
        texts.append(_text_field(record, text_column, path, line))
        if pair_column is not None:
            pairs.append(_text_field(record, pair_column, path, line))
        if label_column is None:
            continue
        key = _label_key(_field(record, label_column, path, line))
        if not key.strip():
            raise DataError("empty label", path=path, line=line, column=label_column)
        if label_names is not None and key not in label_names:
            raise DataError(f"unknown label {key!r}; expected one of {label_names}",
                            path=path, line=line, column=label_column)
        keys.append(key)
    if not texts:
        raise DataError("no records", path=path)
    pairs = pairs if pair_column is not None else None
    if label_column is None:
        return TextClassificationData(texts, pairs, None, None)
    label_names = label_names or _label_vocabulary(keys)
    ids = {name: index for index, name in enumerate(label_names)}
    return TextClassificationData(texts, pairs, np.array([ids[key] for key in keys], np.int32),
                                  label_names)


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
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "mc.jsonl")
    >>> _ = open(path, "w").write('{"question": "Sky?", "choices": ["blue", "red"], "label": 0}\\n')
    >>> data = load_multiple_choice(path)
    >>> data.num_choices, data.labels.tolist()
    (2, [0])
    """
    questions, choices, labels, contexts = [], [], [], []
    for line, record in read_records(path, "jsonl"):
        questions.append(_text_field(record, question_column, path, line))
        options = _field(record, choices_column, path, line)
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise DataError("expected a list of choice texts", path=path, line=line,
                            column=choices_column)
        if len(options) < 2 or (choices and len(options) != len(choices[0])):
            expected = len(choices[0]) if choices else "at least 2"
            raise DataError(f"expected {expected} choices, found {len(options)}",
                            path=path, line=line, column=choices_column)
        choices.append(options)
        if context_column is not None:
            contexts.append(_text_field(record, context_column, path, line))
        if label_column is not None:
            label = _field(record, label_column, path, line)
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


def _static_shape(training):
    """Training pads to `seq_length` (one static shape); otherwise the preprocessor decides."""
    return True if training else None


def _batched_map(columns, labels, preprocess, batch_size, training, shuffle_buffer, seed):
    """Slices `columns` (and `labels`), batches them, and maps `preprocess` over the texts."""
    dataset = tf.data.Dataset.from_tensor_slices(
        (columns,) if labels is None else (columns, labels))
    if training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    # Training batches keep one static shape so the step compiles once (XLA, TPU).
    dataset = dataset.batch(batch_size, drop_remainder=training)

    def preprocess_batch(texts, *labels):
        features = preprocess(texts)
        if training:
            # Tokenization loses the static batch size that drop_remainder gives; restore it.
            features = {name: tf.ensure_shape(value, [batch_size, *value.shape[1:]])
                        for name, value in features.items()}
        return (features, *labels) if labels else features

    return dataset.map(preprocess_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)


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
    return _batched_map(columns, data.labels,
                        lambda texts: preprocessor(texts, static_shape=_static_shape(training)),
                        batch_size, training, shuffle_buffer, seed)


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
                                static_shape=_static_shape(training))
        # Static sequence length (training) stays static through the reshape.
        return {name: tf.reshape(value, [-1, num_choices, value.shape[-1] or tf.shape(value)[-1]])
                for name, value in features.items()}

    return _batched_map(columns, data.labels, preprocess, batch_size, training,
                        shuffle_buffer, seed)
