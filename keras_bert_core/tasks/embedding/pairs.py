"""Training pairs of embedding models: (anchor, positive[, negative]) texts for the
contrastive and triplet losses, or (text1, text2, score) for the cosine-similarity loss,
read from CSV, TSV or JSON lines; and batches that never hold the same text twice."""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.records import field, read_records, text_field

# The columns of each kind of pairs file, the optional ones last.
PAIR_COLUMNS = ("anchor", "positive", "negative")
# The text columns of scored pairs: ours, or those of STS-B and sentence-transformers' data.
SCORED_COLUMNS = (("text1", "text2"), ("sentence1", "sentence2"))
SCORE_COLUMN = "score"


@dataclasses.dataclass
class PairsData:
    """Text columns of training pairs, and their scores for scored pairs.

    Args:
        columns: one list of texts per column, all of the same length: (anchors, positives)
            or (anchors, positives, negatives), or (texts1, texts2) when `scores` is set.
        names: the columns' names in the file.
        scores: float32 [num_examples] for scored pairs, else `None`.

    Example:
    >>> data = PairsData((["a cat", "a dog"], ["the cat", "the dog"]), ("anchor", "positive"))
    >>> len(data), data.scored
    (2, False)
    """

    columns: tuple
    names: tuple
    scores: np.ndarray | None = None

    def __len__(self):
        return len(self.columns[0])

    @property
    def scored(self):
        return self.scores is not None


def load_pairs(path, columns=None, score_column=None, file_format=None):
    """Reads training pairs from a CSV, TSV or JSON-lines file with named columns.

    Without `columns`, the first record decides: with a `score` field, the columns are
    `text1`, `text2` (or `sentence1`, `sentence2`) and `score`; else `anchor`, `positive`
    and, if present, `negative`.

    Args:
        path: the file.
        columns: the names of the text columns, in order (anchor first).
        score_column: the column of the pairs' scores (scored pairs), or `None`.
        file_format: `"csv"`, `"tsv"` or `"jsonl"`; `None` picks it from the extension.

    Returns:
        A `PairsData`.

    Raises:
        DataError: naming the file, line and column of a missing column, an empty text, a
            score that is not a number, or a file without pairs.

    Example:
    >>> import os
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "pairs.csv")
    >>> _ = open(path, "w").write("text1,text2,score\\na cat,the cat,0.9\\n")
    >>> data = load_pairs(path)
    >>> data.names, data.columns, data.scores.tolist()
    (('text1', 'text2'), (['a cat'], ['the cat']), [0.8999999761581421])
    """
    texts, scores = None, []
    for line, record in read_records(path, file_format):
        if texts is None:
            if columns is None:
                score_column = SCORE_COLUMN if SCORE_COLUMN in record else None
                columns = _scored_columns(record) if score_column else tuple(
                    name for name in PAIR_COLUMNS if name != "negative" or name in record)
            columns = tuple(columns)
            if len(columns) < 2:
                raise ValueError(f"pairs need at least two text columns, got {columns}")
            texts = tuple([] for _ in columns)
        for name, values in zip(columns, texts, strict=True):
            value = text_field(record, name, path, line)
            if not value.strip():
                raise DataError("empty text", path=path, line=line, column=name)
            values.append(value)
        if score_column is not None:
            scores.append(_score(field(record, score_column, path, line), path, line,
                                 score_column))
    if texts is None:
        raise DataError("no pairs (only a header?)", path=path)
    return PairsData(texts, columns,
                     None if score_column is None else np.array(scores, "float32"))


def _scored_columns(record):
    return next((names for names in SCORED_COLUMNS if names[0] in record), SCORED_COLUMNS[0])


def _score(value, path, line, column):
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = math.nan
    if isinstance(value, bool) or not math.isfinite(score):
        raise DataError(f"the score must be a number, got {value!r}", path=path, line=line,
                        column=column)
    return score


def unique_text_batches(columns, batch_size, seed=None, drop_remainder=True):
    """Example indices in batches of `batch_size` where no text occurs twice (in any
    column): a text repeated in a batch would be a false negative of the contrastive loss.

    Shuffles with `seed` (none: file order), then fills each batch in that order, putting
    off an example whose texts the batch already holds to the next batches (as
    sentence-transformers' `NoDuplicatesBatchSampler`). With `drop_remainder`, a last
    batch that cannot be filled is left out.

    Example:
    >>> anchors = ["a", "b", "a", "c"]
    >>> positives = ["x", "y", "z", "w"]
    >>> unique_text_batches((anchors, positives), 2)
    [[0, 1], [2, 3]]
    >>> unique_text_batches((["a", "a", "b", "c"], positives), 2)
    [[0, 2], [1, 3]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    count = len(columns[0])
    order = np.arange(count) if seed is None else np.random.default_rng(seed).permutation(count)
    pending = collections.deque(int(index) for index in order)
    batches = []
    while pending:
        batch, seen, put_off = [], set(), []
        while pending and len(batch) < batch_size:
            index = pending.popleft()
            texts = {column[index] for column in columns}
            if seen.isdisjoint(texts):
                batch.append(index)
                seen |= texts
            else:
                put_off.append(index)
        pending.extendleft(reversed(put_off))  # first in line for the next batch
        if len(batch) < batch_size and (drop_remainder or not batch):
            break
        batches.append(batch)
    return batches
