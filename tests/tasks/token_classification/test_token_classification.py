import os

import numpy as np
import pytest

from keras_bert_core.models.metrics import IGNORE_LABEL
from keras_bert_core.tasks.token_classification import (
    TaggingData,
    load_conll,
    predictions_to_tags,
    tagging_features,
)
from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
from tests.tasks.helpers import DATA, VOCAB


def test_features_label_first_piece_only():
    tokenizer = BertTokenizer(VOCAB, lower_case=True)
    data = load_conll(os.path.join(DATA, "ner.conll"))
    features = tagging_features(data, tokenizer, seq_length=16)
    vocab = open(VOCAB, encoding="utf-8").read().split("\n")
    pieces = [vocab[i] for i in features.inputs["token_ids"][1]]
    # "Blackburn" is two pieces; only "black" carries its tag.
    assert pieces[:5] == ["[CLS]", "peter", "black", "##burn", "[SEP]"]
    assert features.labels[1, :5].tolist() == [IGNORE_LABEL, 4, 5, IGNORE_LABEL, IGNORE_LABEL]
    assert features.word_ids[1, :5].tolist() == [-1, 0, 1, -1, -1]
    assert features.inputs["padding_mask"][1].tolist() == [1] * 5 + [0] * 11
    assert (features.labels[1, 4:] == IGNORE_LABEL).all()
    # Every word's tag appears exactly once, at its first piece.
    for row, tags in enumerate(data.tags):
        assert sorted(features.labels[row][features.labels[row] != IGNORE_LABEL]) == sorted(tags)


def test_truncation_warns_and_predictions_round_trip():
    tokenizer = BertTokenizer(VOCAB, lower_case=True)
    data = load_conll(os.path.join(DATA, "ner.conll"))
    with pytest.warns(UserWarning, match=r"word\(s\) did not fit"):
        features = tagging_features(data, tokenizer, seq_length=8)
    assert features.inputs["token_ids"].shape == (3, 8)
    one_hot = np.eye(len(data.tag_names))[np.maximum(features.labels, 0)]
    tags = predictions_to_tags(one_hot, features, data.tag_names)
    truth = [[data.tag_names[i] for i in sentence] for sentence in data.tags]
    assert tags[1:] == truth[1:]
    # The first sentence lost its tail to seq_length: those words come back as "O".
    kept = (features.word_ids[0] >= 0).sum()
    assert tags[0][:kept] == truth[0][:kept] and set(tags[0][kept:]) == {"O"}
    assert len(tags[0]) == len(truth[0])


def test_predictions_to_tags_checks_shape():
    tokenizer = BertTokenizer(VOCAB, lower_case=True)
    features = tagging_features(TaggingData([["ada"]], None, None), tokenizer, seq_length=4)
    assert features.labels is None
    with pytest.raises(ValueError, match="do not match"):
        predictions_to_tags(np.zeros((1, 5), int), features, ["O"])
