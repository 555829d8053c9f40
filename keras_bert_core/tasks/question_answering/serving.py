"""`SpanQuestionAnswering`: a span labeler served from raw question and context."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask, offset_at


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
