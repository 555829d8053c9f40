import os

import numpy as np
import pytest

from keras_bert_core.tasks.question_answering import (
    SquadExample,
    extract_answers,
    load_squad,
    squad_features,
    squad_metrics,
)
from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
from tests.tasks.helpers import DATA

SQUAD_V1 = os.path.join(DATA, "squad_v1.json")
SQUAD_V2 = os.path.join(DATA, "squad_v2.json")


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(DATA, "vocab.txt"), lower_case=True)


def perfect_logits(features):
    """Logits that point at each window's labeled span ([CLS] where it has none)."""
    start_logits = np.zeros(features.char_starts.shape, np.float32)
    end_logits = np.zeros(features.char_starts.shape, np.float32)
    rows = np.arange(len(features))
    start_logits[rows, features.start_positions] = 10.0
    end_logits[rows, features.end_positions] = 10.0
    return start_logits, end_logits


def test_features_layout_offsets_and_labels(tokenizer):
    examples = load_squad(SQUAD_V1)[:3]
    features = squad_features(examples, tokenizer, max_seq_length=48, doc_stride=16,
                              max_query_length=16)
    assert len(features) == 3  # the short context fits in one window per question
    for name, value in features.inputs.items():
        assert value.shape == (3, 48) and value.dtype == np.int32, name
    row = features.inputs
    tokens = [tokenizer.id_to_token(i) for i in row["token_ids"][0][row["padding_mask"][0] == 1]]
    assert tokens[:8] == ["[CLS]", "where", "is", "the", "cafe", "muller", "?", "[SEP]"]
    assert tokens[-1] == "[SEP]"
    assert row["segment_ids"][0].tolist() == [0] * 8 + [1] * (len(tokens) - 8) + [0] * (
        48 - len(tokens))
    # Offsets lead back to the original (cased, accented) context characters.
    start, end = features.start_positions[0], features.end_positions[0]
    context = examples[0].context
    assert context[features.char_starts[0, start]:features.char_ends[0, end]] == "Zürich"
    assert (features.char_starts[0, :8] == -1).all()
    assert features.example_index.tolist() == [0, 1, 2]


def test_perfect_logits_give_gold_answers_and_full_scores(tokenizer):
    examples = load_squad(SQUAD_V1)
    features = squad_features(examples, tokenizer, max_seq_length=40, doc_stride=12,
                              max_query_length=16)
    answers = extract_answers(examples, features, *perfect_logits(features))
    assert answers == {"cafe-city": "Zürich", "cafe-year": "1887",
                       "cafe-founder": "Anna Müller", "curie-birth": "Warsaw",
                       "curie-war": "mobile X-ray units", "curie-chemistry": "1911"}
    assert squad_metrics(answers, examples) == {"exact_match": 100.0, "f1": 100.0}


def test_long_context_windows_find_the_answer_in_the_right_one(tokenizer):
    examples = load_squad(SQUAD_V1)
    war = next(i for i, e in enumerate(examples) if e.qas_id == "curie-war")
    features = squad_features(examples[war:war + 1], tokenizer, max_seq_length=40,
                              doc_stride=12, max_query_length=16)
    assert len(features) > 3
    labeled = np.flatnonzero(features.start_positions)
    assert labeled.size >= 1 and 0 not in labeled  # the answer sits late in the context
    # Windows overlap, each starts doc_stride pieces after the previous one, and together
    # they cover the whole context up to its last character.
    first_piece = [starts[starts >= 0][0] for starts in features.char_starts]
    assert first_piece == sorted(first_piece) and len(set(first_piece)) == len(features)
    assert features.char_ends.max() == len(examples[war].context)
    for row in range(len(features)):
        start, end = features.start_positions[row], features.end_positions[row]
        if row in labeled:
            text = examples[war].context[features.char_starts[row, start]:
                                         features.char_ends[row, end]]
            assert text == "mobile X-ray units"
        else:
            assert start == end == 0
    # Point the logits at the answer in one labeled window only: it must win.
    start_logits, end_logits = np.zeros((2, *features.char_starts.shape), np.float32)
    start_logits[labeled[-1], features.start_positions[labeled[-1]]] = 5.0
    end_logits[labeled[-1], features.end_positions[labeled[-1]]] = 5.0
    answers = extract_answers(examples[war:war + 1], features, start_logits, end_logits)
    assert answers == {"curie-war": "mobile X-ray units"}


def test_v2_impossible_question_gets_empty_answer(tokenizer):
    examples = load_squad(SQUAD_V2)
    features = squad_features(examples, tokenizer, max_seq_length=32, doc_stride=8,
                              max_query_length=12)
    impossible_rows = features.example_index == 2
    assert (features.start_positions[impossible_rows] == 0).all()
    start_logits, end_logits = perfect_logits(features)
    answers = extract_answers(examples, features, start_logits, end_logits,
                              null_score_threshold=0.0)
    assert answers == {"fr-capital": "Paris", "fr-river": "the Seine", "fr-moon": ""}
    assert squad_metrics(answers, examples) == {"exact_match": 100.0, "f1": 100.0}
    # Without the no-answer option (SQuAD 1.1 mode) some span is always returned.
    assert extract_answers(examples, features, start_logits, end_logits)["fr-moon"] != ""
    # A high threshold keeps spans even when [CLS] scores best.
    lenient = extract_answers(examples, features, start_logits, end_logits,
                              null_score_threshold=100.0)
    assert lenient["fr-moon"] != ""


def test_extraction_respects_order_and_max_answer_length(tokenizer):
    examples = load_squad(SQUAD_V2)[:1]
    features = squad_features(examples, tokenizer, max_seq_length=32, doc_stride=8,
                              max_query_length=12)
    first, second, third, last = np.flatnonzero(features.char_starts[0] >= 0)[[0, 1, 2, -1]]

    def answer(starts, ends, **kwargs):
        start_logits, end_logits = np.zeros((2, 1, 32), np.float32)
        for position, value in starts.items():
            start_logits[0, position] = value
        for position, value in ends.items():
            end_logits[0, position] = value
        return extract_answers(examples, features, start_logits, end_logits,
                               **kwargs)["fr-capital"]

    # The best start lies after the best end: the best valid pair wins instead.
    assert answer({last: 9.0, first: 5.0}, {first: 9.0}) == "Paris"
    assert answer({first: 5.0}, {third: 9.0, second: 4.0}) == "Paris is the"
    assert answer({first: 5.0}, {third: 9.0, second: 4.0}, max_answer_length=2) == "Paris is"
    # With n_best_size=1 only the top start and top end pair up; they are invalid.
    assert answer({last: 9.0, first: 5.0}, {first: 9.0}, n_best_size=1) == ""
    with pytest.raises(ValueError, match="must both have the features' shape"):
        extract_answers(examples, features, np.zeros((1, 10)), np.zeros((1, 32)))


def test_question_truncation_and_argument_checks(tokenizer):
    example = SquadExample("q", "where is the cafe muller in zurich ?", "Ada wrote it.")
    features = squad_features([example], tokenizer, max_seq_length=16, doc_stride=4,
                              max_query_length=3)
    assert features.inputs["segment_ids"][0, :5].tolist() == [0, 0, 0, 0, 0]
    assert features.inputs["token_ids"][0, 4] == tokenizer.sep_id
    with pytest.raises(ValueError, match="must exceed max_query_length"):
        squad_features([example], tokenizer, max_seq_length=16, max_query_length=13)


def test_dataset_has_static_training_shapes(tokenizer):
    features = squad_features(load_squad(SQUAD_V1), tokenizer, max_seq_length=40,
                              doc_stride=12, max_query_length=16)
    dataset = features.dataset(batch_size=4, training=True, seed=0)
    inputs, labels = dataset.element_spec
    assert inputs["token_ids"].shape.as_list() == [4, 40]
    assert labels["start_positions"].shape.as_list() == [4]
    batch_inputs, batch_labels = next(iter(dataset))
    assert batch_inputs["padding_mask"].dtype.name == "int32"
    assert len(list(dataset)) == len(features) // 4


def test_best_null_score_threshold_beats_every_other_threshold(tokenizer):
    from keras_bert_core.tasks.question_answering import best_null_score_threshold

    examples = load_squad(SQUAD_V2)
    features = squad_features(examples, tokenizer, max_seq_length=32, doc_stride=8,
                              max_query_length=12)

    def scores(threshold, start_logits, end_logits):
        return squad_metrics(extract_answers(examples, features, start_logits, end_logits,
                                             null_score_threshold=threshold), examples)

    rng = np.random.default_rng(0)
    for _ in range(5):
        start_logits, end_logits = rng.normal(0, 3, (2, *features.char_starts.shape))
        best = best_null_score_threshold(examples, features, start_logits, end_logits)
        # The scores it reports are those of answering with its threshold ...
        at_best = scores(best["null_score_threshold"], start_logits, end_logits)
        assert at_best == {"exact_match": best["exact_match"], "f1": best["f1"]}
        # ... and no other threshold does better.
        for threshold in np.linspace(-40, 40, 161):
            assert scores(threshold, start_logits, end_logits)["f1"] <= best["f1"]
    # Perfect logits: [CLS] wins for the impossible question only, at any threshold near 0.
    start_logits, end_logits = perfect_logits(features)
    best = best_null_score_threshold(examples, features, start_logits, end_logits)
    assert (best["exact_match"], best["f1"]) == (100.0, 100.0)


def test_served_span_answers_nothing_where_the_null_score_wins_by_the_threshold():
    import tensorflow as tf

    from keras_bert_core.tasks.question_answering import SpanQuestionAnswering
    from keras_bert_core.text.packer import BertPacker

    packer = BertPacker(8, cls_id=2, sep_id=3, pad_id=0)
    # [CLS] q [SEP] c c c [SEP] [PAD], four rows of random logits.
    features = {"token_ids": tf.constant([[2, 9, 3, 10, 11, 12, 3, 0]] * 4),
                "padding_mask": tf.constant([[1] * 7 + [0]] * 4)}
    rng = np.random.default_rng(0)
    logits = {name: tf.constant(rng.normal(size=(4, 8)), tf.float32)
              for name in ("start_logits", "end_logits")}
    plain = SpanQuestionAnswering(packer, 3).outputs(logits, features)
    null = (logits["start_logits"][:, 0] + logits["end_logits"][:, 0]).numpy()
    margins = null - plain["score"].numpy()
    threshold = float(np.median(margins))
    served = SpanQuestionAnswering(packer, 3, null_score_threshold=threshold).outputs(
        logits, features)
    nothing = margins > threshold
    assert 0 < nothing.sum() < 4
    np.testing.assert_array_equal(served["start_index"].numpy()[nothing], 0)
    np.testing.assert_array_equal(served["end_index"].numpy()[nothing], 0)
    np.testing.assert_allclose(served["score"].numpy()[nothing], null[nothing])
    for name in ("start_index", "end_index", "score"):
        np.testing.assert_array_equal(served[name].numpy()[~nothing],
                                      plain[name].numpy()[~nothing])
    with pytest.raises(ValueError, match="null_score_threshold must be a finite number"):
        SpanQuestionAnswering(packer, 3, null_score_threshold=float("nan"))
