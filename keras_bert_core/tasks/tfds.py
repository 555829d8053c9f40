"""Benchmark tasks from TensorFlow Datasets, in the same form as the file loaders give.

`load_tfds_task("glue/mrpc", "train")` returns a `TextClassificationData`, `"squad"` a list of
`SquadExample`, `"conll2003"` a `TaggingData`, so the same feature and dataset functions serve
user files and benchmarks alike.
"""

from __future__ import annotations

import numpy as np

from keras_bert_core.errors import DataError
from keras_bert_core.extras import require
from keras_bert_core.tasks.classification import TextClassificationData
from keras_bert_core.tasks.question_answering.squad import squad_example
from keras_bert_core.tasks.token_classification.conll import TaggingData

# GLUE task -> (text feature, pair feature or None), as TFDS names them.
GLUE_TEXT_COLUMNS = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "mnli_matched": ("premise", "hypothesis"),
    "mnli_mismatched": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
    "ax": ("premise", "hypothesis"),
}
SQUAD_TASKS = ("squad", "squad/v1.1", "squad/v2.0")
TAGGING_TASKS = ("conll2003",)
TFDS_TASKS = (*(f"glue/{task}" for task in GLUE_TEXT_COLUMNS), *SQUAD_TASKS, *TAGGING_TASKS)


def _text(value):
    return value.decode("utf-8")


def _glue(records, info, task):
    text_column, pair_column = GLUE_TEXT_COLUMNS[task]
    texts, pairs, labels = [], [], []
    for record in records:
        texts.append(_text(record[text_column]))
        if pair_column is not None:
            pairs.append(_text(record[pair_column]))
        labels.append(record["label"])
    # STS-B is a regression task: float scores, no label names. Test splits carry label -1.
    names = getattr(info.features["label"], "names", None)
    label_names = list(names) if names else None
    labels = np.array(labels, np.int32 if label_names else np.float32)
    return TextClassificationData(texts, pairs if pair_column is not None else None, labels,
                                  label_names)


def _squad(records, name, split):
    examples = []
    for record in records:
        qas_id = _text(record["id"])
        examples.append(squad_example(
            qas_id, _text(record["question"]), _text(record["context"]),
            [_text(text) for text in record["answers"]["text"]],
            [int(start) for start in record["answers"]["answer_start"]],
            bool(record.get("is_impossible", False)), where=f"tfds {name!r} split {split!r}"))
    return examples


def _conll(records, info, name, split):
    sentences, tags = [], []
    for index, record in enumerate(records):
        words, ner = [_text(word) for word in record["tokens"]], record["ner"].tolist()
        if len(words) != len(ner):
            raise DataError(f"example {index} has {len(words)} tokens but {len(ner)} tags",
                            path=f"tfds {name!r} split {split!r}")
        sentences.append(words)
        tags.append(ner)
    return TaggingData(sentences, tags, list(info.features["ner"].feature.names))


def load_tfds_task(name, split, data_dir=None, download=True):
    """Loads a benchmark task from TensorFlow Datasets.

    Args:
        name: one of `TFDS_TASKS`: `"glue/<task>"` (cola, sst2, mrpc, qqp, stsb, mnli,
            mnli_matched, mnli_mismatched, qnli, rte, wnli, ax), `"squad"` (v1.1),
            `"squad/v2.0"`, or `"conll2003"`.
        split: a TFDS split, e.g. `"train"`, `"validation"`, `"train[:10%]"`.
        data_dir: where TFDS keeps its data (its default when `None`).
        download: download and prepare the dataset if it is not in `data_dir` yet.

    Returns:
        GLUE: a `TextClassificationData` (float labels and no label names for STS-B; test
        splits have label -1). SQuAD: a list of `SquadExample`. CoNLL-2003: a `TaggingData`
        of its NER tags.

    Example:
    >>> import tensorflow_datasets as tfds
    >>> with tfds.testing.mock_data(num_examples=2):  # offline: random data, real features
    ...     data = load_tfds_task("glue/mrpc", "train")
    >>> data.label_names, len(data)
    (['not_equivalent', 'equivalent'], 2)
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TFDS_TASKS)}")
    # Imported here: tensorflow_datasets takes seconds to import and only this needs it.
    tfds = require("tensorflow_datasets", f"the TFDS task {name}")

    dataset, info = tfds.load(name, split=split, data_dir=data_dir, download=download,
                              with_info=True)
    records = tfds.as_numpy(dataset)
    if name.startswith("glue/"):
        return _glue(records, info, name.split("/", 1)[1])
    if name in SQUAD_TASKS:
        return _squad(records, name, split)
    return _conll(records, info, name, split)
