"""SQuAD's official scores: exact match and F1 of predicted answer texts."""

from __future__ import annotations

import collections
import re
import string

_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """SQuAD's official normalization: lowercase, drop punctuation, articles, extra spaces.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match_score(prediction, truth):
    """1.0 when the normalized texts are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1_score(prediction, truth):
    """Bag-of-words F1 between normalized texts; an empty text only matches an empty text.

    Example:
    >>> round(f1_score("the Eiffel tower", "Eiffel tower in Paris"), 3)
    0.667
    """
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = sum((collections.Counter(predicted) & collections.Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(predictions, examples):
    """Exact match and F1 in percent, each the best over a question's gold answers.

    A question with no gold answer (SQuAD 2.0 impossible) is right only when the prediction
    is empty; a question missing from `predictions` scores 0, as in the official script.

    Args:
        predictions: dict from `qas_id` to predicted answer text.
        examples: the `SquadExample`s with their gold answers.

    Returns:
        `{"exact_match": float, "f1": float}`.

    Example:
    >>> from keras_bert_core.tasks.question_answering import SquadExample
    >>> example = SquadExample("q1", "Who?", "Ada wrote it.", ["Ada"], [0])
    >>> squad_metrics({"q1": "ada"}, [example])
    {'exact_match': 100.0, 'f1': 100.0}
    """
    if not examples:
        raise ValueError("squad_metrics needs at least one example")
    exact = f1 = 0.0
    for example in examples:
        if example.qas_id not in predictions:
            continue
        example_exact, example_f1 = answer_scores(predictions[example.qas_id], example)
        exact += example_exact
        f1 += example_f1
    return {"exact_match": 100.0 * exact / len(examples), "f1": 100.0 * f1 / len(examples)}


def answer_scores(prediction, example):
    """`(exact match, F1)` of one predicted answer text, each the best over the example's
    gold answers, in [0, 1]; an impossible question (no gold answer) wants "".

    Example:
    >>> from keras_bert_core.tasks.question_answering import SquadExample
    >>> answer_scores("", SquadExample("q1", "Who?", "It rained.", is_impossible=True))
    (1.0, 1.0)
    """
    truths = [text for text in example.answers if normalize_answer(text)] or [""]
    return (max(exact_match_score(prediction, truth) for truth in truths),
            max(f1_score(prediction, truth) for truth in truths))
