import json
import os

import numpy as np
import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.text.squad import (
    SquadExample,
    exact_match_score,
    extract_answers,
    f1_score,
    load_squad,
    normalize_answer,
    squad_features,
    squad_metrics,
)
from keras_bert_core.text.tokenizer import BertTokenizer

DATA = os.path.join(os.path.dirname(__file__), "data", "tasks")
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


def test_load_squad_v1_and_v2():
    examples = load_squad(SQUAD_V1)
    assert [e.qas_id for e in examples] == ["cafe-city", "cafe-year", "cafe-founder",
                                            "curie-birth", "curie-war", "curie-chemistry"]
    city = examples[0]
    assert city.answers == ["Zürich", "in Zürich"]
    assert city.context[city.answer_starts[0]:].startswith("Zürich")
    assert not any(e.is_impossible for e in examples)
    v2 = load_squad(SQUAD_V2)
    assert [e.is_impossible for e in v2] == [False, False, True]
    assert v2[2].answers == [] and v2[2].answer_starts == []


def squad_file(tmp_path, qa, context="Ada wrote it."):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": [qa]}]}]}))
    return str(path)


@pytest.mark.parametrize("qa, match", [
    ({"id": "q", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 3}]},
     r"data\[0\].paragraphs\[0\].qas\[0\]: question 'q': answer 'Ada' is not at "
     r"answer_start 3 of the context \(found ' wr' there\)"),
    ({"id": "q", "answers": []}, r"data\[0\].paragraphs\[0\].qas\[0\]: expected a str 'question'"),
    ({"id": "q", "question": "Who?", "answers": [{"text": "Ada"}]},
     r"qas\[0\].answers\[0\]: expected a int 'answer_start'"),
])
def test_load_squad_errors_locate_the_problem(tmp_path, qa, match):
    path = squad_file(tmp_path, qa)
    with pytest.raises(DataError, match=match) as info:
        load_squad(path)
    assert str(info.value).startswith(path)


def test_load_squad_malformed_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [\n  {"paragraphs": }\n]}')
    with pytest.raises(DataError, match=r"bad.json, line 2: malformed JSON"):
        load_squad(str(path))


def test_official_normalization_and_scores():
    assert normalize_answer("  The Eiffel   Tower, in PARIS! ") == "eiffel tower in paris"
    assert normalize_answer("an apple a day") == "apple day"
    assert exact_match_score("the Eiffel Tower", "Eiffel tower.") == 1.0
    assert exact_match_score("Eiffel", "Eiffel tower") == 0.0
    # 2 common tokens: precision 2/3, recall 2/2.
    assert f1_score("Eiffel tower Paris", "the Eiffel Tower") == pytest.approx(0.8)
    assert f1_score("", "") == 1.0 and f1_score("tower", "") == 0.0
    assert f1_score("Paris", "Rome") == 0.0


def test_metrics_take_the_best_gold_answer_and_count_missing_as_wrong():
    examples = [SquadExample("a", "q", "c", ["Zürich", "in Zürich"], [0, 0]),
                SquadExample("b", "q", "c", ["1887"], [0]),
                SquadExample("c", "q", "c", [], [], is_impossible=True)]
    scores = squad_metrics({"a": "in zürich.", "c": ""}, examples)
    assert scores == {"exact_match": pytest.approx(200 / 3), "f1": pytest.approx(200 / 3)}
    half = squad_metrics({"a": "Zürich Switzerland", "b": "1887", "c": "x"}, examples)
    assert half["exact_match"] == pytest.approx(100 / 3)
    assert half["f1"] == pytest.approx(100 * (2 / 3 + 1) / 3)


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
