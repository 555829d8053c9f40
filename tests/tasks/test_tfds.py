"""`load_tfds_task` offline, through `tfds.testing.mock_data`.

The mock replaces download and preparation, so it checks our conversion against each real
builder's feature specification and label names (both defined in TFDS's code, no download);
it cannot check the downloaded files themselves.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.question_answering import SquadExample
from keras_bert_core.tasks.tfds import GLUE_TEXT_COLUMNS, TFDS_TASKS, load_tfds_task


def fixed_examples(examples):
    """An `as_dataset_fn` for `mock_data` that yields `examples` in the builder's own specs."""
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_generator(
            lambda: iter(examples), output_signature=self.info.features.get_tensor_spec())
    return as_dataset


@pytest.mark.parametrize("task, label_names", [
    ("sst2", ["negative", "positive"]),
    ("mrpc", ["not_equivalent", "equivalent"]),
    ("qnli", ["entailment", "not_entailment"]),
    ("mnli", ["entailment", "neutral", "contradiction"]),
])
def test_glue_classification(task, label_names):
    with tfds.testing.mock_data(num_examples=5):
        data = load_tfds_task(f"glue/{task}", "train")
    assert len(data) == 5
    assert data.label_names == label_names
    assert data.labels.dtype == np.int32 and set(data.labels) <= set(range(len(label_names)))
    assert all(isinstance(text, str) for text in data.texts)
    if GLUE_TEXT_COLUMNS[task][1] is None:
        assert data.pairs is None
    else:
        assert len(data.pairs) == 5 and all(isinstance(text, str) for text in data.pairs)


def test_glue_regression_and_columns_of_every_task():
    for task, (text_column, pair_column) in GLUE_TEXT_COLUMNS.items():
        features = tfds.builder(f"glue/{task}").info.features
        assert text_column in features and (pair_column is None or pair_column in features)
    with tfds.testing.mock_data(num_examples=3):
        data = load_tfds_task("glue/stsb", "validation")
    assert data.labels.dtype == np.float32 and data.label_names is None


def test_squad_v1_and_v2():
    example = {"id": "q1", "title": "t", "context": "Ada wrote the first program.",
               "question": "Who wrote it?",
               "answers": {"text": ["Ada", "Ada"], "answer_start": [0, 0]}}
    with tfds.testing.mock_data(as_dataset_fn=fixed_examples([example])):
        examples = load_tfds_task("squad", "validation")
    assert examples == [SquadExample("q1", "Who wrote it?", "Ada wrote the first program.",
                                     ["Ada", "Ada"], [0, 0], False)]
    impossible = {**example, "id": "q2", "is_impossible": True,
                  "answers": {"text": [], "answer_start": []},
                  "plausible_answers": {"text": ["Ada"], "answer_start": [0]}}
    with tfds.testing.mock_data(as_dataset_fn=fixed_examples([impossible])):
        (example_v2,) = load_tfds_task("squad/v2.0", "train")
    assert example_v2.is_impossible and example_v2.answers == []


def test_squad_misplaced_answer_is_a_data_error():
    example = {"id": "q7", "title": "t", "context": "Ada wrote it.", "question": "Who?",
               "answers": {"text": ["Ada"], "answer_start": [4]}}
    with tfds.testing.mock_data(as_dataset_fn=fixed_examples([example])):
        with pytest.raises(DataError, match=r"tfds 'squad' split 'train': question 'q7': "
                                            r"answer 'Ada' is not at answer_start 4"):
            load_tfds_task("squad", "train")


def test_conll2003_ner():
    sentence = {"tokens": ["EU", "rejects", "German", "call"], "pos": [0, 1, 2, 3],
                "chunks": [0, 1, 2, 3], "ner": [3, 0, 7, 0]}
    with tfds.testing.mock_data(as_dataset_fn=fixed_examples([sentence, sentence])):
        data = load_tfds_task("conll2003", "train")
    assert data.sentences == [["EU", "rejects", "German", "call"]] * 2
    assert [data.tag_names[i] for i in data.tags[0]] == ["B-ORG", "O", "B-MISC", "O"]
    assert data.tag_names[0] == "O" and len(data.tag_names) == 9


def test_conll2003_length_mismatch_and_unknown_task():
    broken = {"tokens": ["EU", "rejects"], "pos": [0, 1], "chunks": [0, 1], "ner": [3]}
    with tfds.testing.mock_data(as_dataset_fn=fixed_examples([broken])):
        with pytest.raises(DataError, match=r"example 0 has 2 tokens but 1 tags"):
            load_tfds_task("conll2003", "train")
    with pytest.raises(ValueError, match="unknown task 'glue/nope'"):
        load_tfds_task("glue/nope", "train")
    assert "glue/sst2" in TFDS_TASKS and "squad" in TFDS_TASKS
