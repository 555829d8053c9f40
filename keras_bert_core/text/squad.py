"""Extractive question answering in SQuAD format: examples, windowed features, answers, metrics.

`load_squad` reads SQuAD v1.1 / v2.0 JSON; `squad_features` tokenizes question and context,
cuts long contexts into overlapping windows and labels each window with the answer's token
span (or `[CLS]`, index 0, when the answer is not inside it); `extract_answers` turns the
span labeler's start/end logits back into text cut from the original context, and
`squad_metrics` scores it with SQuAD's official exact-match and F1.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import string

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError


@dataclasses.dataclass
class SquadExample:
    """One question about one context.

    Args:
        qas_id: the question's id.
        question: the question text.
        context: the passage the answer is cut from.
        answers: gold answer texts (several in evaluation sets; empty when impossible).
        answer_starts: character offset of each answer in `context`.
        is_impossible: SQuAD 2.0: the context holds no answer.

    Example:
    >>> example = SquadExample("q1", "Who?", "Ada wrote it.", ["Ada"], [0])
    >>> example.context[example.answer_starts[0]:][:len(example.answers[0])]
    'Ada'
    """

    qas_id: str
    question: str
    context: str
    answers: list = dataclasses.field(default_factory=list)
    answer_starts: list = dataclasses.field(default_factory=list)
    is_impossible: bool = False


def load_squad(path):
    """Reads a SQuAD v1.1 or v2.0 JSON file into `SquadExample`s.

    Args:
        path: the JSON file (`{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}`).

    Returns:
        A list of `SquadExample`, in file order.

    Raises:
        DataError: naming the file and the JSON location of a missing field, or of an
            answer whose text is not found at its `answer_start` in the context.

    Example:
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.json")
    >>> qa = {"id": "q1", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]}
    >>> _ = open(path, "w").write(json.dumps(
    ...     {"data": [{"paragraphs": [{"context": "Ada wrote it.", "qas": [qa]}]}]}))
    >>> load_squad(path)[0].answers
    ['Ada']
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            root = json.load(f)
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except json.JSONDecodeError as error:
        raise DataError(f"malformed JSON at character {error.colno}: {error.msg}",
                        path=path, line=error.lineno) from None

    def get(node, key, where, kind):
        if not isinstance(node, dict) or not isinstance(node.get(key), kind):
            raise DataError(f"{where}: expected a {kind.__name__} {key!r}", path=path)
        return node[key]

    examples = []
    for a, article in enumerate(get(root, "data", "top level", list)):
        for p, paragraph in enumerate(get(article, "paragraphs", f"data[{a}]", list)):
            where = f"data[{a}].paragraphs[{p}]"
            context = get(paragraph, "context", where, str)
            for q, qa in enumerate(get(paragraph, "qas", where, list)):
                where_qa = f"{where}.qas[{q}]"
                qas_id = get(qa, "id", where_qa, str)
                impossible = bool(qa.get("is_impossible", False))
                answers = [] if impossible else get(qa, "answers", where_qa, list)
                for n, answer in enumerate(answers):
                    for key, kind in (("text", str), ("answer_start", int)):
                        get(answer, key, f"{where_qa}.answers[{n}]", kind)
                examples.append(squad_example(
                    qas_id, get(qa, "question", where_qa, str), context,
                    [answer["text"] for answer in answers],
                    [answer["answer_start"] for answer in answers], impossible,
                    where=f"{path}, {where_qa}"))
    return examples


def squad_example(qas_id, question, context, answers, answer_starts, is_impossible=False,
                  where=None):
    """A `SquadExample`, checked: every answer must sit at its start offset in the context.

    Raises:
        DataError: naming `where` (the source), the question id and the misplaced answer.
    """
    for text, start in zip(answers, answer_starts, strict=True):
        found = context[start:start + len(text)]
        if found != text:
            raise DataError(f"question {qas_id!r}: answer {text!r} is not at answer_start "
                            f"{start} of the context (found {found!r} there)", path=where)
    return SquadExample(qas_id, question, context, list(answers), list(answer_starts),
                        is_impossible)


@dataclasses.dataclass
class SquadFeatures:
    """Windows of `[CLS] question [SEP] context-slice [SEP]`, one row each.

    Args:
        inputs: dict of int32 `[num_windows, max_seq_length]` `token_ids`, `segment_ids`,
            `padding_mask`, ready for the encoder.
        start_positions: int32 `[num_windows]` token index of the answer's first piece;
            0 (`[CLS]`) when the window does not hold the whole answer.
        end_positions: int32 `[num_windows]` token index of the answer's last piece (or 0).
        example_index: int32 `[num_windows]` index of the window's `SquadExample`.
        char_starts: int32 `[num_windows, max_seq_length]` character offset in the context
            where each token starts; -1 for question, special and padding tokens.
        char_ends: int32 `[num_windows, max_seq_length]` character offset one past each
            token's end; -1 outside the context.

    Example (see `squad_features`, which makes them):
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "wrote", "it"]
    >>> features = squad_features([SquadExample("q1", "Who?", "Ada wrote it.")],
    ...                           BertTokenizer(vocab), max_seq_length=10, max_query_length=4)
    >>> features.char_starts[0].tolist(), features.char_ends[0].tolist()
    ([-1, -1, -1, -1, 0, 4, 10, 12, -1, -1], [-1, -1, -1, -1, 3, 9, 12, 13, -1, -1])
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    char_starts: np.ndarray
    char_ends: np.ndarray

    def __len__(self):
        return len(self.example_index)

    def dataset(self, batch_size=32, training=False, shuffle_buffer=10_000, seed=None):
        """A `tf.data.Dataset` of `(inputs, {"start_positions", "end_positions"})` batches.

        Training shuffles and drops the last partial batch, so every batch has one static
        shape.
        """
        labels = {"start_positions": self.start_positions, "end_positions": self.end_positions}
        dataset = tf.data.Dataset.from_tensor_slices((self.inputs, labels))
        if training:
            dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        return dataset.batch(batch_size, drop_remainder=training).prefetch(tf.data.AUTOTUNE)


def _char_offsets(text, byte_starts, byte_ends):
    """Converts UTF-8 byte offsets into `text` to character offsets."""
    char_bytes = np.cumsum([0] + [len(c.encode("utf-8")) for c in text])
    starts = np.searchsorted(char_bytes, byte_starts, side="right") - 1
    ends = np.searchsorted(char_bytes, byte_ends, side="left")
    return starts, ends


def _padded(values, length, fill):
    row = np.full(length, fill, np.int32)
    row[:len(values)] = values
    return row


def _answer_token_span(char_starts, char_ends, answer_start, answer_end):
    """First and last token overlapping `[answer_start, answer_end)`, or None."""
    overlapping = np.flatnonzero((char_ends > answer_start) & (char_starts < answer_end))
    return (overlapping[0], overlapping[-1]) if overlapping.size else None


def squad_features(examples, tokenizer, max_seq_length=384, doc_stride=128,
                   max_query_length=64):
    """Tokenizes examples into fixed-length windows with answer positions and char offsets.

    The question is cut to `max_query_length` pieces; the context is split into windows of
    the pieces that fit beside it, each starting `doc_stride` pieces after the previous one,
    so every piece appears with enough context in some window. A window's answer label is
    the token span of the example's first answer when the window holds all of it, else
    `[CLS]` (index 0) for both start and end, as for impossible questions.

    Args:
        examples: `SquadExample`s.
        tokenizer: the package's `BertTokenizer` (its offsets map pieces to the context).
        max_seq_length: tokens per window, specials included.
        doc_stride: pieces between the starts of consecutive windows.
        max_query_length: longest question kept, in pieces.

    Returns:
        A `SquadFeatures`.

    Example:
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "ada", "?"]
    >>> example = SquadExample("q1", "Who wrote it?", "Ada wrote it.", ["Ada"], [0])
    >>> features = squad_features([example], BertTokenizer(vocab), max_seq_length=12,
    ...                           doc_stride=4, max_query_length=8)
    >>> features.inputs["token_ids"][0].tolist()
    [2, 5, 6, 7, 9, 3, 8, 6, 7, 1, 3, 0]
    >>> int(features.start_positions[0]), int(features.end_positions[0])
    (6, 6)
    """
    if max_query_length + 3 >= max_seq_length:
        raise ValueError(f"max_seq_length ({max_seq_length}) must exceed max_query_length "
                         f"({max_query_length}) + 3 to leave room for the context")
    if doc_stride <= 0:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    if not examples:
        raise ValueError("squad_features needs at least one example")
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    questions = tokenizer([example.question for example in examples]).to_list()
    contexts = sorted({example.context for example in examples})
    piece_ids, byte_starts, byte_ends = (
        ragged.to_list() for ragged in tokenizer.tokenize_with_offsets(contexts))
    tokenized = {context: (np.array(ids, np.int32), *_char_offsets(context, starts, ends))
                 for context, ids, starts, ends
                 in zip(contexts, piece_ids, byte_starts, byte_ends, strict=True)}

    rows = collections.defaultdict(list)
    for index, example in enumerate(examples):
        question = questions[index][:max_query_length]
        ids, starts, ends = tokenized[example.context]
        span = None
        if example.answers and not example.is_impossible:
            answer_start = example.answer_starts[0]
            span = _answer_token_span(starts, ends, answer_start,
                                      answer_start + len(example.answers[0]))
        offset = len(question) + 2  # [CLS] question [SEP]
        budget = max_seq_length - offset - 1
        window_start = 0
        while True:
            window_end = min(window_start + budget, len(ids))
            window = slice(window_start, window_end)
            token_ids = [cls_id, *question, sep_id, *ids[window], sep_id]
            rows["token_ids"].append(_padded(token_ids, max_seq_length, pad_id))
            rows["segment_ids"].append(_padded(
                [0] * offset + [1] * (len(token_ids) - offset), max_seq_length, 0))
            rows["padding_mask"].append(_padded([1] * len(token_ids), max_seq_length, 0))
            rows["char_starts"].append(_padded([-1] * offset + [*starts[window]],
                                               max_seq_length, -1))
            rows["char_ends"].append(_padded([-1] * offset + [*ends[window]], max_seq_length, -1))
            inside = span is not None and window_start <= span[0] and span[1] < window_end
            rows["start_positions"].append(span[0] - window_start + offset if inside else 0)
            rows["end_positions"].append(span[1] - window_start + offset if inside else 0)
            rows["example_index"].append(index)
            if window_end == len(ids):
                break
            window_start += min(doc_stride, budget)
    arrays = {name: np.array(values, np.int32) for name, values in rows.items()}
    return SquadFeatures(
        inputs={name: arrays.pop(name) for name in ("token_ids", "segment_ids", "padding_mask")},
        **arrays)


def extract_answers(examples, features, start_logits, end_logits, n_best_size=20,
                    max_answer_length=30, null_score_threshold=None):
    """Picks each question's best answer span across its windows, as original context text.

    In every window the `n_best_size` highest start and end logits over context tokens are
    paired; spans with `start <= end` and at most `max_answer_length` pieces are scored by
    `start_logit + end_logit`, and the best across all windows wins. Its text is cut from the
    original context through the character offsets, so case, accents and spacing survive.

    Args:
        examples: the `SquadExample`s the features were made from.
        features: their `SquadFeatures`.
        start_logits: float `[num_windows, max_seq_length]`.
        end_logits: float `[num_windows, max_seq_length]`.
        n_best_size: start and end candidates considered per window.
        max_answer_length: longest answer, in pieces.
        null_score_threshold: SQuAD 2.0: answer "" (no answer) when the `[CLS]` score
            (lowest over the windows) exceeds the best span's score by more than this.
            `None` (SQuAD 1.1) always answers with a span.

    Returns:
        A dict from `qas_id` to the answer text ("" for no answer).

    Example:
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
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
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    if start_logits.shape != features.char_starts.shape or (
            end_logits.shape != features.char_starts.shape):
        raise ValueError(f"start_logits {start_logits.shape} and end_logits {end_logits.shape} "
                         f"must both have the features' shape {features.char_starts.shape}")
    positions = np.arange(start_logits.shape[1])
    span_lengths = positions[None, :] - positions[:, None] + 1  # [start, end] -> pieces
    best = {}  # example index -> (score, text)
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
            context = examples[index].context
            best[index] = (scores[i, j], context[starts[top_starts[i, 0]]:ends[top_ends[0, j]]])
    answers = {}
    for index, null_score in null_scores.items():
        score, text = best.get(index, (-np.inf, ""))
        if null_score_threshold is not None and null_score - score > null_score_threshold:
            text = ""
        answers[examples[index].qas_id] = text
    return answers


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
        prediction = predictions[example.qas_id]
        truths = [text for text in example.answers if normalize_answer(text)] or [""]
        exact += max(exact_match_score(prediction, truth) for truth in truths)
        f1 += max(f1_score(prediction, truth) for truth in truths)
    return {"exact_match": 100.0 * exact / len(examples), "f1": 100.0 * f1 / len(examples)}
