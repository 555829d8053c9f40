import numpy as np
import tensorflow as tf

from keras_bert_core.pretraining.pairs import _pair_instances


def pair_instances(doc_lengths, seed, max_num_tokens=20, short_seq_prob=0.0,
                   pair_task="next_sentence"):
    """Runs `_pair_instances` on documents whose token ids count up from 0."""
    sentences = tf.RaggedTensor.from_row_lengths(
        tf.range(sum(sum(d) for d in doc_lengths), dtype=tf.int64),
        [n for d in doc_lengths for n in d],
    )
    docs = tf.RaggedTensor.from_row_lengths(sentences, [len(d) for d in doc_lengths])
    a, b, labels = _pair_instances(
        docs, tf.constant([seed, 0], tf.int64), max_num_tokens, short_seq_prob, pair_task
    )
    return a.to_list(), b.to_list(), labels.numpy()


def test_trimming_matches_google_research():
    # Two 30-token sentences per document, room for 20: each side keeps 10 tokens, and
    # each trimmed token comes from the front with probability 1/2.
    a, b, labels = pair_instances([[30, 30]] * 40, seed=1)
    assert all(len(x) == 10 and len(y) == 10 for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(x, np.arange(x[0], x[0] + 10)) for x in a + b)
    front_cuts = np.array([x[0] % 30 for x in a])  # Sentences start at multiples of 30.
    assert 8.5 < front_cuts.mean() < 11.5 and front_cuts.std() > 1
    assert labels.all()  # A one-sentence chunk always takes a random B.


def test_short_seq_prob_shortens_pairs():
    docs = [[3] * 100] * 10
    full = pair_instances(docs, seed=2, max_num_tokens=60)
    short = pair_instances(docs, seed=2, max_num_tokens=60, short_seq_prob=1.0)
    full_length, short_length = (
        np.mean([len(a) + len(b) for a, b in zip(*pairs[:2], strict=True)])
        for pairs in (full, short)
    )
    # Chunks fill to 60 tokens but at document ends; short targets are uniform in [2, 60].
    assert full_length > 55 and 25 < short_length < 36
    assert len(short[0]) > 1.5 * len(full[0])


def document_of(doc_lengths):
    """The document of every token id of `pair_instances`'s documents."""
    return np.repeat(np.arange(len(doc_lengths)), [sum(d) for d in doc_lengths])


def test_sentence_order_pairs_are_continuations_swapped_half_the_time():
    rng = np.random.default_rng(0)
    doc_lengths = [list(rng.integers(1, 12, rng.integers(1, 8))) for _ in range(300)]
    doc_lengths[:3] = [[1], [1, 1], [5]]  # a one-token document makes no pair
    # Room for whole chunks, so nothing is trimmed: B is exactly the text after A.
    a, b, labels = pair_instances(doc_lengths, seed=3, max_num_tokens=60,
                                  pair_task="sentence_order")
    document = document_of(doc_lengths)
    assert len(a) > 250
    for x, y, label in zip(a, b, labels, strict=True):
        first, second = (y, x) if label else (x, y)
        assert x and y and first == list(range(first[0], second[0])), (x, y, label)
        assert second == list(range(second[0], second[-1] + 1))
        assert document[first[0]] == document[second[-1]]
    assert 0.45 < labels.mean() < 0.55  # 1 = swapped
    assert 0 not in sum(a + b, [])  # document 0 is one token
    # One-sentence documents split inside the sentence.
    assert any(set(x + y) == {3, 4, 5, 6, 7} for x, y in zip(a, b, strict=True))

    # Long sentences are split and then trimmed as for next-sentence pairs, keeping order.
    a, b, labels = pair_instances([[30, 30]] * 40, seed=1, pair_task="sentence_order")
    assert all(len(x) + len(y) == 20 for x, y in zip(a, b, strict=True))
    assert all((max(y) < min(x)) == bool(label) for x, y, label in zip(a, b, labels,
                                                                        strict=True))
    assert 0.3 < labels.mean() < 0.7
