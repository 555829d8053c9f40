"""Moved to `keras_bert_core.cli.demo_corpus`; kept until bench/serving_peers.py and
tests/text/make_bpe_fixture.py import from there."""

from keras_bert_core.cli.demo_corpus import TOPICS, read_docstrings, topic_examples  # noqa: F401
