import json
import os

import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.question_answering import (
    SquadExample,
    exact_match_score,
    f1_score,
    load_squad,
    normalize_answer,
    squad_metrics,
)
from tests.tasks.helpers import DATA

SQUAD_V1 = os.path.join(DATA, "squad_v1.json")
SQUAD_V2 = os.path.join(DATA, "squad_v2.json")


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
