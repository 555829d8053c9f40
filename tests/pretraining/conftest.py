"""Fixtures of the pretraining data tests (`pretraining_helpers` holds the rest)."""

import pytest

from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
from tests.pretraining.helpers import VOCAB, make_dataset, write_corpus


@pytest.fixture(scope="module")
def pretraining_corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("pretraining"))


@pytest.fixture(scope="module")
def pretraining_tokenizer():
    return BertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def pretraining_stream(pretraining_corpus, pretraining_tokenizer):
    return make_dataset(pretraining_corpus, pretraining_tokenizer, seed=5)
