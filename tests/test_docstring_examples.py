"""Every example in the package's docstrings runs and prints what it shows."""

import doctest
import importlib
import inspect
import pkgutil

import pytest

import keras_bert_core


def modules_with_examples():
    names = [info.name for info in pkgutil.walk_packages(
        keras_bert_core.__path__, prefix="keras_bert_core.")]
    return [name for name in names if not name.endswith("__main__")
            and ">>>" in inspect.getsource(importlib.import_module(name))]


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples(name):
    if name.endswith("export.warmup"):
        pytest.importorskip("tensorflow_serving", reason="tensorflow-serving-api is not "
                            "installed (pip install tensorflow-serving-api)")
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
