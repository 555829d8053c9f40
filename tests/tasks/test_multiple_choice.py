import os

import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.multiple_choice import (
    MultipleChoiceData,
    load_multiple_choice,
    multiple_choice_dataset,
)
from tests.tasks.helpers import DATA, write


def test_multiple_choice_file_and_text_pairs():
    data = load_multiple_choice(os.path.join(DATA, "choices.jsonl"), context_column="context")
    assert data.num_choices == 3 and len(data) == 3
    assert data.labels.tolist() == [0, 0, 1]
    firsts, seconds = data.text_pairs()
    assert firsts[:3] == ["Ada opened the fridge."] * 3
    assert seconds[:2] == ["She took out the milk.", "She took out the moon."]
    plain = MultipleChoiceData(["Sky?"], [["blue", "red"]], None)
    assert plain.text_pairs() == (["Sky?", "Sky?"], ["blue", "red"])


@pytest.mark.parametrize("line, match", [
    ('{"question": "q", "choices": ["a", "b", "c"], "label": 3}',
     r"line 2, column 'label': label must be a choice index in \[0, 3\), got 3"),
    ('{"question": "q", "choices": ["a", "b"], "label": 0}',
     r"line 2, column 'choices': expected 3 choices, found 2"),
    ('{"question": "q", "choices": "a b c", "label": 0}',
     r"line 2, column 'choices': expected a list of choice texts"),
    ('{"choices": ["a", "b", "c"], "label": 0}', r"line 2, column 'question': missing"),
])
def test_multiple_choice_errors(tmp_path, line, match):
    first = '{"question": "q", "choices": ["a", "b", "c"], "label": 1}\n'
    path = write(tmp_path, "mc.jsonl", first + line + "\n")
    with pytest.raises(DataError, match=match):
        load_multiple_choice(path)


def test_multiple_choice_dataset_shapes(preprocessor):
    data = load_multiple_choice(os.path.join(DATA, "choices.jsonl"), context_column="context")
    dataset = multiple_choice_dataset(data, preprocessor, batch_size=2, training=True, seed=0)
    assert dataset.element_spec[0]["token_ids"].shape.as_list() == [2, 3, 16]
    features, labels = next(iter(multiple_choice_dataset(data, preprocessor, batch_size=3)))
    assert features["token_ids"].shape[:2] == (3, 3) and labels.numpy().tolist() == [0, 0, 1]
    # Row (question 1, choice 2) holds exactly that pair.
    expected = preprocessor(("Ada opened the fridge.", "She took out a river."),
                            static_shape=False)["token_ids"].numpy()
    row = features["token_ids"][0, 2].numpy()
    assert row[:len(expected)].tolist() == expected.tolist() and not row[len(expected):].any()
