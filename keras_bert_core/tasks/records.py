"""Records of the task files, shared by the tasks: CSV, TSV and JSON lines, and `tf.data`
batches of texts.

`read_records` yields each record with its line number; `field` and `text_field` take a value
out of one, raising `DataError` that names the file, the line and the column at fault.
`text_batches` turns columns of texts into preprocessed `tf.data` batches.
"""

from __future__ import annotations

import csv
import json
import os

import tensorflow as tf

from keras_bert_core.errors import DataError

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
# UTF-8 that drops a byte-order mark at the start: Excel's "CSV UTF-8" and Windows editors
# write one, which would otherwise stick to the first column's name (or break line 1's JSON).
_ENCODING = "utf-8-sig"


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
    if not os.path.exists(path):
        raise DataError("no such file", path=path)
    if os.path.isdir(path):
        raise DataError("a folder, not a file", path=path)
    if file_format is None:
        extension = os.path.splitext(path)[1].lower()
        if extension not in _FORMATS:
            # Renaming is the fix a `kbc` user has (file_format= is for Python callers).
            raise DataError(f"cannot tell the format from the extension {extension!r}: "
                            "name the file .csv, .tsv or .jsonl", path=path)
        file_format = _FORMATS[extension]
    if file_format not in ("csv", "tsv", "jsonl"):
        raise ValueError(f"file_format must be 'csv', 'tsv' or 'jsonl', got {file_format!r}")
    if os.path.getsize(path) == 0:
        raise DataError("the file is empty", path=path)
    try:
        if file_format == "jsonl":
            yield from _read_jsonl(path)
        else:
            yield from _read_delimited(path, file_format)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None


def _not_utf8(path):
    """The DataError for a file that is not UTF-8, at the line of its first bad byte (the
    decoder's own offset counts from the chunk it was reading)."""
    with open(path, "rb") as f:
        data = f.read()
    start = 0
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        start = error.start
    return DataError(f"not UTF-8 text: the byte {data[start]:#04x}; convert the file to UTF-8 "
                     "(e.g. `iconv -f latin1 -t utf-8`)", path=path,
                     line=data.count(b"\n", 0, start) + 1)


# What a pretty-printed file or a JSON array (valid JSON, read line by line) is told.
_JSON_LINES = "(the file is read as JSON lines: one object per line)"


def _read_jsonl(path):
    with open(path, encoding=_ENCODING) as f:
        for line_number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"malformed JSON at character {error.colno}: {error.msg} "
                                f"{_JSON_LINES}", path=path, line=line_number) from None
            if not isinstance(record, dict):
                raise DataError(f"expected a JSON object, got {type(record).__name__} "
                                f"{_JSON_LINES}", path=path, line=line_number)
            yield line_number, record


def _read_delimited(path, file_format):
    options = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if file_format == "tsv" else {}
    with open(path, encoding=_ENCODING, newline="") as f:
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


def field(record, column, path, line):
    """`record[column]`; a `DataError` at `path`, `line` and `column` if it is missing."""
    if column not in record or record[column] is None:
        raise DataError(f"missing (the record has {', '.join(map(repr, record)) or 'nothing'})",
                        path=path, line=line, column=column)
    return record[column]


def text_field(record, column, path, line):
    """`record[column]`, which must be text; a `DataError` naming the place if it is not."""
    value = field(record, column, path, line)
    if not isinstance(value, str):
        raise DataError(f"expected text, got {type(value).__name__} {value!r}",
                        path=path, line=line, column=column)
    return value


def static_shape(training):
    """Training pads to `seq_length` (one static shape); otherwise the preprocessor decides."""
    return True if training else None


def text_batches(columns, labels, preprocess, batch_size, training, shuffle_buffer, seed):
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
