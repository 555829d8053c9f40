"""SQuAD features: question and context cut into overlapping windows, each labeled with
the answer's token span and carrying the character offsets its answer is cut with."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import ConfigError
from keras_bert_core.text.preprocessor import packing_of


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
    >>> from keras_bert_core.tasks.question_answering import SquadExample
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
    >>> from keras_bert_core.tasks.question_answering import SquadExample
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
        raise ConfigError(f"max_seq_length ({max_seq_length}) must exceed max_query_length "
                         f"({max_query_length}) + 3 to leave room for the context")
    if doc_stride <= 0:
        raise ConfigError(f"doc_stride must be positive, got {doc_stride}")
    if not examples:
        raise ValueError("squad_features needs at least one example")
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    packing = packing_of(tokenizer)
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
