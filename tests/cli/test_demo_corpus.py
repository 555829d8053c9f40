import collections

import pytest

from keras_bert_core.cli import demo_corpus


@pytest.fixture(scope="module")
def docstrings():
    return demo_corpus.read_docstrings()


def test_reads_thousands_of_docstrings_without_test_modules(docstrings):
    assert len(docstrings) > 3000
    assert not any(d.module.startswith(("test.", "idlelib")) for d in docstrings)
    assert any(d.module == "pathlib" for d in docstrings)


def test_sentences_drop_doctests_and_code():
    text = "Return the sum. It is fast.\n\n>>> add(1, 2)\n3\n    code_line()\nThe end is near."
    assert demo_corpus.sentences(text) == ["Return the sum.", "It is fast.", "3 The end is near."]


def test_pretraining_corpus_has_google_research_layout(docstrings, tmp_path):
    path = tmp_path / "corpus.txt"
    documents = demo_corpus.write_pretraining_corpus(docstrings[:50], path)
    blocks = [b for b in path.read_text().split("\n\n") if b.strip()]
    assert len(blocks) == documents > 10


def test_topic_split_keeps_modules_on_one_side(docstrings):
    train, held_out = demo_corpus.topic_examples(docstrings)
    assert len(train) > 1000 and len(held_out) > 100
    assert set(collections.Counter(t for _, t in train)) == set(demo_corpus.TOPICS)
    assert not {text for text, _ in train} & {text for text, _ in held_out}
    assert all(len(text.split()) <= 64 for text, _ in train)
