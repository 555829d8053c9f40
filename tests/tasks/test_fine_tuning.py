"""`keras_bert_core.tasks.fine_tuning`: the tasks `kbc` runs, and the options `kbc` names
them by without loading TensorFlow."""

import pytest

from keras_bert_core.cli.tasks import DATA_OPTIONS, TASK_NAMES
from keras_bert_core.tasks.fine_tuning import DEFAULT_SETTINGS, TASKS, Classify, task_of


def test_the_cli_names_the_library_tasks_and_their_default_settings():
    assert TASK_NAMES == tuple(sorted(TASKS))
    assert {name: default for name, (default, _) in DATA_OPTIONS.items()} == DEFAULT_SETTINGS


def test_task_of_a_model_without_settings_says_so():
    import keras_bert_core as kbc

    encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=20))
    model = Classify({"label_names": ["a", "b"]}).build_model(encoder)
    assert task_of(model).settings["label_names"] == ["a", "b"]
    model.task_settings = None
    with pytest.raises(ValueError, match="carries no fine-tuning task settings"):
        task_of(model)
