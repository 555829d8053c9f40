"""Shared task fixtures."""

import pytest

from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.tasks.helpers import VOCAB


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(VOCAB, seq_length=16, lower_case=True, static_shape=False)
