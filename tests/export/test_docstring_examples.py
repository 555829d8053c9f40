"""The examples in the export modules' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = ["keras_bert_core.export.saved_model", "keras_bert_core.export.tasks",
           "keras_bert_core.export.tflite", "keras_bert_core.export.warmup"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name.endswith("warmup"):
        pytest.importorskip("tensorflow_serving", reason="tensorflow-serving-api is not "
                            "installed (pip install tensorflow-serving-api)")
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
