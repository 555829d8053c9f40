import os
import random

import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.token_classification import entity_scores, get_entities, load_conll
from tests.tasks.helpers import DATA


def write(tmp_path, text, name="data.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_load_conll_reads_sentences_and_skips_docstart():
    data = load_conll(os.path.join(DATA, "ner.conll"))
    assert data.sentences == [
        ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
        ["Peter", "Blackburn"],
        ["BRUSSELS", "1996-08-22"],
    ]
    assert data.tag_names == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    names = [[data.tag_names[i] for i in sentence] for sentence in data.tags]
    assert names[0] == ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    assert names[1] == ["B-PER", "I-PER"]


def test_load_conll_other_tag_column_and_given_vocabulary(tmp_path):
    path = write(tmp_path, "Ada NNP B-NP B-PER\nsang VBD B-VP O\n")
    data = load_conll(path, tag_column=2, tag_names=["B-NP", "B-VP", "I-NP"])
    assert data.tags == [[0, 1]]
    unlabeled = load_conll(path, tag_column=None)
    assert unlabeled.tags is None and unlabeled.sentences == [["Ada", "sang"]]


@pytest.mark.parametrize("text, tag_names, match", [
    ("Ada B-PER\nsang\n", None, r"line 2, column -1: expected a word and a tag in column -1, "
                               r"found 'sang'"),
    ("Ada B-PER\n\nsang B-VERB\n", ["O", "B-PER"], r"line 3, column -1: unknown tag 'B-VERB'"),
    ("-DOCSTART- O\n\n\n", None, "no sentences"),
])
def test_load_conll_errors_name_line_and_column(tmp_path, text, tag_names, match):
    path = write(tmp_path, text)
    with pytest.raises(DataError, match=match) as info:
        load_conll(path, tag_names=tag_names)
    assert path in str(info.value)


def test_get_entities_bio_and_iob1():
    assert get_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]
    # IOB1: I- opens an entity, B- only splits two adjacent ones of the same type.
    assert get_entities(["I-ORG", "I-ORG", "B-ORG", "I-PER"]) == [
        ("ORG", 0, 2), ("ORG", 2, 3), ("PER", 3, 4)]
    assert get_entities(["B-PER", "I-LOC", "O"]) == [("PER", 0, 1), ("LOC", 1, 2)]


def test_entity_scores_counts_exact_spans():
    truth = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "B-ORG"]]
    scores = entity_scores(truth, predicted)
    # 2 of 3 predicted right, 2 of 3 true found.
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 / 3)
    assert scores["per_type"]["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                         "support": 1}
    with pytest.raises(ValueError, match="sentence 1: 2 true tags but 1 predicted"):
        entity_scores(truth, [predicted[0], ["O"]])


def random_tags(rng, length, tags):
    return [rng.choice(tags) for _ in range(length)]


@pytest.mark.parametrize("tags", [
    ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],          # BIO (IOB2)
    ["O", "I-PER", "I-LOC", "B-PER", "B-LOC"],          # IOB1
])
def test_entity_scores_match_seqeval(tags):
    seqeval = pytest.importorskip("seqeval.metrics", reason="seqeval is the reference")
    rng = random.Random(0)
    for _ in range(20):
        truth = [random_tags(rng, rng.randint(1, 12), tags) for _ in range(6)]
        predicted = [random_tags(rng, len(sentence), tags) for sentence in truth]
        scores = entity_scores(truth, predicted)
        assert scores["precision"] == pytest.approx(seqeval.precision_score(truth, predicted))
        assert scores["recall"] == pytest.approx(seqeval.recall_score(truth, predicted))
        assert scores["f1"] == pytest.approx(seqeval.f1_score(truth, predicted))
