"""Extractive question answering (`BertSpanLabeler`): windowed features, answers, serving.

`squad_features` tokenizes question and context, cuts long contexts into overlapping windows
and labels each window with the answer's token span (or `[CLS]`, index 0, when the answer is
not inside it); `answers` turns the span labeler's start/end logits back into answer text cut
from the original context, with its character offsets (`extract_answers`: the text alone,
by question id; `best_null_score_threshold`: SQuAD 2.0's best threshold for answering
nothing); `SpanQuestionAnswering` serves the model from raw text. The examples and
their scoring are SQuAD's (`keras_bert_core.tasks.squad`).
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask, offset_at
from keras_bert_core.text.preprocessor import PACKING
from keras_bert_core.text.vocabulary.files import tokenizer_kind


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
    >>> from keras_bert_core.tasks.squad import SquadExample
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
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
        tokenizer: one of the package's tokenizers (its offsets map pieces to the context);
            rows are packed as its family packs pairs (RoBERTa: `<s> Q </s></s> C </s>`,
            one segment id).
        max_seq_length: tokens per window, specials included.
        doc_stride: pieces between the starts of consecutive windows.
        max_query_length: longest question kept, in pieces.

    Returns:
        A `SquadFeatures`.

    Example:
    >>> from keras_bert_core.tasks.squad import SquadExample
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
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
    packing = PACKING[tokenizer_kind(tokenizer)]
    separators, context_segment = packing["pair_separators"], packing["second_segment_id"]
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
        offset = len(question) + 1 + separators  # [CLS] question [SEP] (RoBERTa: </s></s>)
        budget = max_seq_length - offset - 1
        window_start = 0
        while True:
            window_end = min(window_start + budget, len(ids))
            window = slice(window_start, window_end)
            token_ids = [cls_id, *question, *[sep_id] * separators, *ids[window], sep_id]
            rows["token_ids"].append(_padded(token_ids, max_seq_length, pad_id))
            rows["segment_ids"].append(_padded(
                [0] * offset + [context_segment] * (len(token_ids) - offset),
                max_seq_length, 0))
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
    >>> from keras_bert_core.tasks.squad import SquadExample
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
    >>> from keras_bert_core.tasks.squad import SquadExample
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
    from keras_bert_core.tasks.squad import answer_scores

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
    >>> from keras_bert_core.tasks.squad import SquadExample
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


class SpanQuestionAnswering(ServingTask):
    """The best answer span of `BertSpanLabeler` within the context, and its text.

    The question is the first segment, the context the second (found by `packer`, the
    preprocessor's, in any family's layout). The best span maximizes
    `start_logit + end_logit` over context tokens with `start <= end < start +
    max_answer_length`. A row without context tokens answers index 0 (`[CLS]`) with the
    null score `start_logits[0] + end_logits[0]` and an empty answer; so does a row whose
    null score beats its best span's score by more than `null_score_threshold` (SQuAD 2.0,
    the rule `answers` follows).

    Args:
        packer: the preprocessor's `BertPacker`.
        max_answer_length: longest answer, in wordpieces.
        null_score_threshold: SQuAD 2.0: no answer when `null score - best span score`
            exceeds it (`best_null_score_threshold` finds a good one); None (SQuAD 1.1):
            always the best span.

    Example:
    >>> from keras_bert_core.text.packer import BertPacker
    >>> task = SpanQuestionAnswering(BertPacker(8, cls_id=2, sep_id=3, pad_id=0),
    ...                              max_answer_length=2)
    >>> # [CLS] question [SEP] three context pieces [SEP]
    >>> features = {"token_ids": tf.constant([[2, 9, 3, 10, 11, 12, 3]]),
    ...             "padding_mask": tf.ones([1, 7], tf.int32)}
    >>> logits = {"start_logits": tf.constant([[0.0, 0, 0, 1, 5, 0, 9]]),
    ...           "end_logits": tf.constant([[0.0, 0, 0, 0, 1, 6, 9]])}
    >>> outputs = task.outputs(logits, features)  # never the final [SEP], at most 2 pieces
    >>> outputs["start_index"].numpy().tolist(), outputs["end_index"].numpy().tolist()
    ([4], [5])
    >>> strict = SpanQuestionAnswering(task.packer, 2, null_score_threshold=-12.0)
    >>> strict.outputs(logits, features)["start_index"].numpy().tolist()  # 0 - 11 > -12
    [0]
    """

    text_inputs = ("question", "context")

    def __init__(self, packer, max_answer_length=30, null_score_threshold=None):
        super().__init__(pairs=True)
        self.packer = packer
        if not isinstance(max_answer_length, int) or max_answer_length < 1:
            raise ValueError(f"max_answer_length must be a positive integer, "
                             f"got {max_answer_length!r}")
        self.max_answer_length = max_answer_length
        if null_score_threshold is not None and not np.isfinite(null_score_threshold):
            raise ValueError(f"null_score_threshold must be a finite number or None, "
                             f"got {null_score_threshold!r}")
        self.null_score_threshold = null_score_threshold

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        if not with_offsets:
            return super().encode(preprocessor, texts, static_shape)
        tokenizer = preprocessor.tokenizer
        question = tokenizer(texts["question"])
        context, starts, ends = tokenizer.tokenize_with_offsets(texts["context"])
        features = preprocessor.packer((question, context), static_shape=static_shape)
        return features, (starts, ends)

    def outputs(self, model_outputs, features):
        start_logits = model_outputs["start_logits"]
        end_logits = model_outputs["end_logits"]
        context = self.packer.second_segment_mask(features)
        seq_length = tf.shape(start_logits)[1]
        position = tf.range(seq_length)
        span_length = tf.expand_dims(position, 0) - tf.expand_dims(position, 1)  # [start, end]
        allowed = (span_length >= 0) & (span_length < self.max_answer_length)
        allowed = (tf.expand_dims(allowed, 0) & tf.expand_dims(context, 2)
                   & tf.expand_dims(context, 1))
        scores = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)
        flat_shape = [tf.shape(scores)[0], -1]
        scores = tf.reshape(tf.where(allowed, scores, tf.float32.min), flat_shape)
        found = tf.reduce_any(tf.reshape(allowed, flat_shape), axis=-1)
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)
        best_score = tf.reduce_max(scores, axis=-1)
        null_score = start_logits[:, 0] + end_logits[:, 0]
        if self.null_score_threshold is not None:
            found &= null_score - best_score <= self.null_score_threshold
        return {
            "start_logits": start_logits,
            "end_logits": end_logits,
            "start_index": tf.where(found, best // seq_length, 0),
            "end_index": tf.where(found, best % seq_length, 0),
            "score": tf.where(found, best_score, null_score),
        }

    def offset_outputs(self, outputs, features, offsets):
        starts, ends = offsets
        # Context piece k sits at `first + k`, right after the question's separator(s).
        first = tf.argmax(tf.cast(self.packer.second_segment_mask(features), tf.int32),
                          axis=1, output_type=tf.int32)
        found = outputs["start_index"] > 0
        begin = tf.where(found, offset_at(starts, outputs["start_index"] - first), 0)
        end = tf.where(found, offset_at(ends, outputs["end_index"] - first), 0)
        return {"answer_start": begin, "answer_end": end}

    def text_outputs(self, outputs, features, texts, offsets):
        begin, end = outputs["answer_start"], outputs["answer_end"]
        return {"answer": tf.strings.substr(texts["context"], begin, end - begin)}
