"""Extractive question answering (`BertSpanLabeler`) on SQuAD data: one module per concept.

- `squad`: `SquadExample` and `load_squad`, SQuAD v1.1 / v2.0 JSON;
- `features`: `squad_features` tokenizes question and context, cuts long contexts into
  overlapping windows and labels each window with the answer's token span (or `[CLS]`,
  index 0, when the answer is not inside it);
- `decoding`: `answers` turns the span labeler's start/end logits back into answer text cut
  from the original context, with its character offsets (`extract_answers`: the text alone,
  by question id; `best_null_score_threshold`: SQuAD 2.0's best threshold for answering
  nothing);
- `scores`: SQuAD's official exact match and F1 (`squad_metrics`);
- `serving`: `SpanQuestionAnswering` serves the model from raw text.
"""

from keras_bert_core.tasks.question_answering.decoding import (
    answers,
    best_null_score_threshold,
    extract_answers,
)
from keras_bert_core.tasks.question_answering.features import SquadFeatures, squad_features
from keras_bert_core.tasks.question_answering.scores import (
    answer_scores,
    exact_match_score,
    f1_score,
    normalize_answer,
    squad_metrics,
)
from keras_bert_core.tasks.question_answering.serving import SpanQuestionAnswering
from keras_bert_core.tasks.question_answering.squad import SquadExample, load_squad, squad_example

__all__ = [
    "SpanQuestionAnswering",
    "SquadExample",
    "SquadFeatures",
    "answer_scores",
    "answers",
    "best_null_score_threshold",
    "exact_match_score",
    "extract_answers",
    "f1_score",
    "load_squad",
    "normalize_answer",
    "squad_example",
    "squad_features",
    "squad_metrics",
]
