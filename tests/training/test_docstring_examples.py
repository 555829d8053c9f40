"""The examples in the training modules' docstrings run and print what they show."""

import doctest

import pytest

from keras_bert_core.training import callbacks, distribution, optimizer, schedule


@pytest.mark.parametrize("module", [callbacks, distribution, optimizer, schedule],
                         ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
