"""A span labeler's start/end logits back to answer text cut from the original context,
with its character offsets; and SQuAD 2.0's best threshold for answering nothing."""

from __future__ import annotations

import numpy as np

from keras_bert_core.tasks.question_answering.scores import answer_scores


def answers(examples, features, start_logits, end_logits, n_best_size=20,
            max_answer_length=30, null_score_threshold=None):
    """A fine-tuned `BertSpanLabeler`'s answers: each question's best span across its
    windows, as original context text with its character offsets.

    In every window the `n_best_size` highest start and end logits over context tokens are
    paired; spans with `start <= end` and at most `max_answer_length` pieces are scored by
    `start_logit + end_logit`, and the best across all windows wins. Its text is cut from the
    original context through the character offsets, so case, accents and spacing survive.

    Args:
        examples: the `SquadExample`s the features were made from.
        features: their `SquadFeatures`.
        start_logits: float `[num_windows, max_seq_length]`, e.g.
            `model.predict(features.inputs)["start_logits"]`.
        end_logits: float `[num_windows, max_seq_length]`.
        n_best_size: start and end candidates considered per window.
        max_answer_length: longest answer, in pieces.
        null_score_threshold: SQuAD 2.0: answer "" (no answer) when the `[CLS]` score
            (lowest over the windows) exceeds the best span's score by more than this.
            `None` (SQuAD 1.1) always answers with a span.

    Returns:
        One JSON-ready dict per example, in order: `{"id", "question", "answer",
        "answer_start", "answer_end"}`, where `context[answer_start:answer_end] == answer`;
        the answer "" and offsets `None` for no answer.

    Example:
    >>> from keras_bert_core.tasks.question_answering import SquadExample, squad_features
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "ada"]
    >>> example = SquadExample("q1", "Who wrote it?", "Ada wrote it.")
    >>> features = squad_features([example], BertTokenizer(vocab), max_seq_length=12,
    ...                           doc_stride=4, max_query_length=8)
    >>> logits = np.zeros((1, 12), "float32")
    >>> logits[0, 6] = 5.0  # "Ada", as start and as end
    >>> answers([example], features, logits, logits)
    [{'id': 'q1', 'question': 'Who wrote it?', 'answer': 'Ada', 'answer_start': 0, 'answer_end': 3}]
    """
    best, null_scores = _span_and_null_scores(features, start_logits, end_logits, n_best_size,
                                              max_answer_length)
    results = []
    for index, null_score in null_scores.items():
        example = examples[index]
        score, begin, end = best.get(index, (-np.inf, None, None))
        if null_score_threshold is not None and null_score - score > null_score_threshold:
            begin = end = None
        results.append({"id": example.qas_id, "question": example.question,
                        "answer": "" if begin is None else example.context[begin:end],
                        "answer_start": begin, "answer_end": end})
    return results


def _span_and_null_scores(features, start_logits, end_logits, n_best_size, max_answer_length):
    """`(best, null_scores)`, both by example index: the best span over the example's windows
    as `(score, first character, end character)` (missing when no window has one), and the
    lowest `[CLS]` score `start_logit + end_logit` over its windows."""
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    if start_logits.shape != features.char_starts.shape or (
            end_logits.shape != features.char_starts.shape):
        raise ValueError(f"start_logits {start_logits.shape} and end_logits {end_logits.shape} "
                         f"must both have the features' shape {features.char_starts.shape}")
    positions = np.arange(start_logits.shape[1])
    span_lengths = positions[None, :] - positions[:, None] + 1  # [start, end] -> pieces
    best = {}  # example index -> (score, first character, end character)
    null_scores = {}
    for row, index in enumerate(features.example_index):
        starts, ends = features.char_starts[row], features.char_ends[row]
        null_score = start_logits[row, 0] + end_logits[row, 0]
        null_scores[index] = min(null_scores.get(index, np.inf), null_score)
        # Only context tokens can open or close an answer.
        start_scores = np.where(starts >= 0, start_logits[row], -np.inf)
        end_scores = np.where(starts >= 0, end_logits[row], -np.inf)
        top_starts = np.argsort(-start_scores, kind="stable")[:n_best_size, None]
        top_ends = np.argsort(-end_scores, kind="stable")[None, :n_best_size]
        scores = start_scores[top_starts] + end_scores[top_ends]
        lengths = span_lengths[top_starts, top_ends]
        scores[(lengths < 1) | (lengths > max_answer_length)] = -np.inf
        i, j = np.unravel_index(np.argmax(scores), scores.shape)
        if np.isfinite(scores[i, j]) and scores[i, j] > best.get(index, (-np.inf,))[0]:
            best[index] = (scores[i, j], int(starts[top_starts[i, 0]]),
                           int(ends[top_ends[0, j]]))
    return best, null_scores


def best_null_score_threshold(examples, features, start_logits, end_logits, n_best_size=20,
                              max_answer_length=30):
    """SQuAD 2.0: the `null_score_threshold` of `answers` that gives the best F1 on labeled
    `examples`, and the scores there, as the official evaluation script's best-threshold
    search does.

    A question gets its best span when its margin `null_score - span_score` is at most the
    threshold, else no answer. Every threshold between two neighbouring margins gives the
    same answers, so trying each margin (and one below all, where nothing is answered)
    finds the best. Ties keep the lowest threshold.

    Args:
        examples: the `SquadExample`s, with their gold answers (none when impossible).
        features, start_logits, end_logits, n_best_size, max_answer_length: as `answers`.

    Returns:
        `{"null_score_threshold": float, "exact_match": float, "f1": float}`: the threshold
        and `squad_metrics` of `answers(..., null_score_threshold=threshold)` (percent).

    Example:
    >>> from keras_bert_core.tasks.question_answering import SquadExample, squad_features
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "ada"]
    >>> examples = [SquadExample("q1", "Who wrote it?", "Ada wrote it.", ["Ada"], [0]),
    ...             SquadExample("q2", "Who wrote it?", "it wrote it.", is_impossible=True)]
    >>> features = squad_features(examples, BertTokenizer(vocab), max_seq_length=12,
    ...                           doc_stride=4, max_query_length=8)
    >>> logits = np.zeros((2, 12), "float32")
    >>> logits[:, 6] = [2.0, 1.5]  # each context's first word; [CLS] scores 0
    >>> best_null_score_threshold(examples, features, logits, logits)
    {'null_score_threshold': -4.0, 'exact_match': 100.0, 'f1': 100.0}
    """
    if not examples:
        raise ValueError("best_null_score_threshold needs at least one example")
    best, null_scores = _span_and_null_scores(features, start_logits, end_logits, n_best_size,
                                              max_answer_length)
    # Per question: (margin, exact match and F1 of its span, of no answer); the questions
    # without a window score 0 either way, as in `squad_metrics`.
    questions = []
    for index, null_score in null_scores.items():
        example = examples[index]
        score, begin, end = best.get(index, (-np.inf, None, None))
        span = answer_scores("" if begin is None else example.context[begin:end], example)
        questions.append((float(null_score - score), span, answer_scores("", example)))
    questions.sort(key=lambda question: question[0])
    exact = sum(none[0] for _, _, none in questions)
    f1 = sum(none[1] for _, _, none in questions)
    finite = [margin for margin, _, _ in questions if np.isfinite(margin)]
    # Below every margin: nothing answered (in float32, as `answers` compares).
    threshold = float(np.nextafter(np.float32(finite[0]), np.float32(-np.inf))) if finite else 0.0
    best_scores = (f1, exact, threshold)
    for i, (margin, span, none) in enumerate(questions):
        if not np.isfinite(margin):  # no span: never answered
            break
        exact += span[0] - none[0]
        f1 += span[1] - none[1]
        # A threshold answers every question up to its margin: compare after the last tie.
        last_of_tie = i + 1 == len(questions) or questions[i + 1][0] != margin
        if last_of_tie and f1 > best_scores[0]:
            best_scores = (f1, exact, margin)
    f1, exact, threshold = best_scores
    return {"null_score_threshold": threshold, "exact_match": 100.0 * exact / len(examples),
            "f1": 100.0 * f1 / len(examples)}


def extract_answers(examples, features, start_logits, end_logits, n_best_size=20,
                    max_answer_length=30, null_score_threshold=None):
    """The answer texts of `answers` by question id, as SQuAD's scoring takes them.

    Returns:
        A dict from `qas_id` to the answer text ("" for no answer).

    Example:
    >>> from keras_bert_core.tasks.question_answering import SquadExample, squad_features
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "ada"]
    >>> example = SquadExample("q1", "Who wrote it?", "Ada wrote it.")
    >>> features = squad_features([example], BertTokenizer(vocab), max_seq_length=12,
    ...                           doc_stride=4, max_query_length=8)
    >>> logits = np.zeros((1, 12), "float32")
    >>> logits[0, 6] = 5.0  # "Ada", as start and as end
    >>> extract_answers([example], features, logits, logits, null_score_threshold=0.0)
    {'q1': 'Ada'}
    >>> logits[0, 0] = 6.0  # [CLS] now outscores the span: no answer
    >>> extract_answers([example], features, logits, logits, null_score_threshold=0.0)
    {'q1': ''}
    """
    return {answer["id"]: answer["answer"] for answer in answers(
        examples, features, start_logits, end_logits, n_best_size, max_answer_length,
        null_score_threshold)}
