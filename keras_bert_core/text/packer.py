"""Packing wordpiece ids into BERT's fixed layout, with TensorFlow core ops only."""

import keras
import tensorflow as tf

from keras_bert_core.text.preprocessing_layer import PreprocessingLayer

TRUNCATION_MODES = ("round_robin", "longest_first")
# Dynamic (inference) padding rounds the batch's longest sequence up to a multiple of this.
PAD_TO_MULTIPLE_OF = 8


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertPacker(PreprocessingLayer):
    """Packs one or two segments of token ids as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

    The BERT family packs pairs in two ways, both options of this layer: BERT, ALBERT and
    DistilBERT as `[CLS] A [SEP] B [SEP]` with segment ids 0 then 1 (the defaults);
    RoBERTa as `<s> A </s></s> B </s>` with segment ids all 0 (`pair_separators=2`,
    `second_segment_id=0`: it has one token type), as Hugging Face's `RobertaProcessing`
    does. A single segment is `[CLS] A [SEP]` in both.

    Segments longer than the room left by `seq_length` are trimmed at their end (the room
    is `seq_length` less every special token: 4 for a RoBERTa pair). The layer
    uses only dense TensorFlow core ops on the ragged tensors' values and row splits (no
    ragged or tf.text ops), so it runs in TF Serving and converts to TFLite builtin ops.

    Args:
        seq_length: the longest packed sequence, special tokens included.
        cls_id: id of `[CLS]`.
        sep_id: id of `[SEP]`.
        pad_id: id of `[PAD]`.
        pair_separators: how many `[SEP]` end the first segment of a pair: 1 (BERT) or 2
            (RoBERTa's `</s></s>`).
        second_segment_id: the segment id of the second segment of a pair and its `[SEP]`:
            1 (BERT), or 0 for models with one token type (RoBERTa).
        truncation: how two segments share the room: `"round_robin"` takes one token from
            each segment in turn, starting with the first (tf.text's `RoundRobinTrimmer`);
            `"longest_first"` removes tokens from the longer segment, from the first one on a
            tie (Hugging Face `tokenizers`' `longest_first`). They differ only in which
            segment keeps the odd token when both are cut.
        static_shape: if True, outputs are [batch, seq_length] (training: static shapes for
            XLA and TPU). If False, they are padded to the longest packed sequence in the
            batch rounded up to a multiple of 8, at most `seq_length` (inference). `call` can
            override it.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: int ragged tensor [batch, (ids)], or a tuple/list of two of them, or 1-D int
            tensors for a single unbatched example.
        static_shape: overrides the constructor's `static_shape` when not None.

    Returns:
        dict of int32 tensors [batch, length] (or [length] unbatched): `token_ids`,
        `segment_ids` (0 for `[CLS]`, A and its `[SEP]`, `second_segment_id` for B and its
        `[SEP]`, 0 for padding) and `padding_mask` (1 for real tokens, 0 for padding).

    Example:
    >>> packer = BertPacker(seq_length=8, cls_id=2, sep_id=3, pad_id=0, static_shape=False)
    >>> a = tf.ragged.constant([[10, 11, 12], [13]])
    >>> b = tf.ragged.constant([[20, 21, 22, 23, 24], [25]])
    >>> out = packer((a, b))
    >>> out["token_ids"].numpy().tolist()
    [[2, 10, 11, 12, 3, 20, 21, 3], [2, 13, 3, 25, 3, 0, 0, 0]]
    >>> out["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]]
    >>> packer(a)["token_ids"].numpy().tolist()
    [[2, 10, 11, 12, 3, 0, 0, 0], [2, 13, 3, 0, 0, 0, 0, 0]]
    >>> roberta = BertPacker(seq_length=8, cls_id=0, sep_id=2, pad_id=1, pair_separators=2,
    ...                      second_segment_id=0, static_shape=False)
    >>> out = roberta((a, b))
    >>> out["token_ids"].numpy().tolist()
    [[0, 10, 11, 2, 2, 20, 21, 2], [0, 13, 2, 2, 25, 2, 1, 1]]
    >>> out["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]
    """

    def __init__(
        self,
        seq_length,
        cls_id,
        sep_id,
        pad_id,
        truncation="round_robin",
        static_shape=True,
        pair_separators=1,
        second_segment_id=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if truncation not in TRUNCATION_MODES:
            raise ValueError(f"truncation must be one of {TRUNCATION_MODES}, got {truncation!r}.")
        if seq_length < 2:
            raise ValueError(f"seq_length must be at least 2 ([CLS] and [SEP]), got {seq_length}.")
        if pair_separators not in (1, 2):
            raise ValueError(f"pair_separators must be 1 or 2, got {pair_separators!r}.")
        if second_segment_id not in (0, 1):
            raise ValueError(f"second_segment_id must be 0 or 1, got {second_segment_id!r}.")
        self.seq_length = int(seq_length)
        self.cls_id = int(cls_id)
        self.sep_id = int(sep_id)
        self.pad_id = int(pad_id)
        self.truncation = truncation
        self.static_shape = bool(static_shape)
        self.pair_separators = int(pair_separators)
        self.second_segment_id = int(second_segment_id)

    def call(self, inputs, static_shape=None):
        static_shape = self.static_shape if static_shape is None else static_shape
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPacker takes one or two segments, got {len(segments)}.")
        # [CLS], then the separators after each segment.
        separators = [self.pair_separators, 1] if len(segments) == 2 else [1]
        num_special = 1 + sum(separators)
        if num_special > self.seq_length:
            raise ValueError(f"seq_length {self.seq_length} cannot hold {num_special} "
                             "special tokens.")
        unbatched = not isinstance(segments[0], tf.RaggedTensor)
        values, starts, lengths = zip(*(_values_starts_lengths(s) for s in segments), strict=True)
        kept = self._trim(lengths, self.seq_length - num_special)
        outputs = self._pack(values, starts, kept, separators, static_shape)
        if unbatched:
            outputs = {name: x[0] for name, x in outputs.items()}
        return outputs

    def pack_rows(self, values, starts, lengths, static_shape=None):
        """Packs rows of one segment each, `[CLS] values[start:start + length] [SEP]`, from
        flat int32 `values` and the rows' `starts` and `lengths` (each at most
        `seq_length - 2`): rows may overlap (the windows of `text.windows`).

        >>> packer = BertPacker(seq_length=8, cls_id=2, sep_id=3, pad_id=0, static_shape=False)
        >>> packer.pack_rows(tf.constant([10, 11, 12]), tf.constant([0, 1]),
        ...                  tf.constant([2, 2]))["token_ids"].numpy().tolist()
        [[2, 10, 11, 3, 0, 0, 0, 0], [2, 11, 12, 3, 0, 0, 0, 0]]
        """
        static_shape = self.static_shape if static_shape is None else static_shape
        return self._pack((values,), (starts,), (lengths,), [1], static_shape)

    def _pack(self, values, starts, kept, separators, static_shape):
        """The packed rows of segments `values` (flat ids, one per segment) whose rows keep
        `kept` ids from `starts`, each segment followed by its `separators`."""
        num_special = 1 + sum(separators)
        total = num_special + tf.add_n(list(kept))

        if static_shape:
            width = self.seq_length
        else:
            longest = tf.maximum(tf.reduce_max(total), 0)  # 0 for an empty batch
            rounded = -(-longest // PAD_TO_MULTIPLE_OF) * PAD_TO_MULTIPLE_OF
            width = tf.minimum(rounded, self.seq_length)
        position = tf.range(width)[tf.newaxis, :]  # [1, width]

        token_ids = tf.where(position == 0, self.cls_id, self.pad_id)
        begin = tf.ones_like(total)[:, tf.newaxis]
        for vals, start, keep, count in zip(values, starts, kept, separators, strict=True):
            end = begin + keep[:, tf.newaxis]
            inside = (position >= begin) & (position < end)
            # Index 0 of the padded values is a dummy, so the gather never reads out of range
            # (segments may be empty).
            index = tf.where(inside, start[:, tf.newaxis] + position - begin + 1, 0)
            padded = tf.concat([[self.pad_id], vals], 0)
            token_ids = tf.where(inside, tf.gather(padded, index), token_ids)
            token_ids = tf.where((position >= end) & (position < end + count), self.sep_id,
                                 token_ids)
            begin = end + count
        real = position < total[:, tf.newaxis]
        if len(values) == 2 and self.second_segment_id:
            # The second segment and its [SEP] come after the first segment's separators.
            second = position >= 1 + kept[0][:, tf.newaxis] + self.pair_separators
            segment_ids = tf.cast(real & second, tf.int32)
        else:
            segment_ids = tf.zeros_like(token_ids)
        return {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": tf.cast(real, tf.int32),
        }

    def second_segment_mask(self, features):
        """Where a packed pair's second segment is, its closing separator excluded: bool
        `[batch, length]` from the packed `features` (`token_ids`, `padding_mask`), for any
        pair layout (segment ids say nothing for RoBERTa, which has one token type).

        >>> packer = BertPacker(8, cls_id=0, sep_id=2, pad_id=1, pair_separators=2,
        ...                     second_segment_id=0)
        >>> out = packer((tf.ragged.constant([[7]]), tf.ragged.constant([[8, 9]])))
        >>> packer.second_segment_mask(out).numpy().astype(int).tolist()
        [[0, 0, 0, 0, 1, 1, 0, 0]]
        """
        token_ids = tf.cast(features["token_ids"], tf.int32)
        first_separator = tf.argmax(tf.cast(tf.equal(token_ids, self.sep_id), tf.int32),
                                    axis=1, output_type=tf.int32)
        length = tf.reduce_sum(tf.cast(features["padding_mask"] > 0, tf.int32), axis=1)
        # expand_dims, not [:, None]: TFLite cannot convert a new axis of a dynamic shape.
        position = tf.expand_dims(tf.range(tf.shape(token_ids)[1]), 0)
        return ((position >= tf.expand_dims(first_separator + self.pair_separators, 1))
                & (position < tf.expand_dims(length - 1, 1)))

    def _trim(self, lengths, room):
        """Number of ids each segment keeps, per example, so that all fit in `room`."""
        if len(lengths) == 1:
            return [tf.minimum(lengths[0], room)]
        length_a, length_b = lengths
        # When both segments are cut, one gets the odd token: the first one for round robin,
        # the longer one (the second on a tie) for longest first.
        if self.truncation == "round_robin":
            share_a = tf.fill(tf.shape(length_a), (room + 1) // 2)
        else:
            share_a = tf.where(length_a > length_b, (room + 1) // 2, room // 2)
        share_b = room - share_a
        keep_a = tf.minimum(length_a, tf.maximum(room - length_b, share_a))
        keep_b = tf.minimum(length_b, tf.maximum(room - length_a, share_b))
        return [keep_a, keep_b]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "cls_id": self.cls_id,
                "sep_id": self.sep_id,
                "pad_id": self.pad_id,
                "truncation": self.truncation,
                "static_shape": self.static_shape,
                "pair_separators": self.pair_separators,
                "second_segment_id": self.second_segment_id,
            }
        )
        return config


def _values_starts_lengths(segment):
    """Flat int32 ids, each example's first index into them, and each example's length."""
    if isinstance(segment, tf.RaggedTensor):
        if segment.ragged_rank != 1:
            raise ValueError(f"Expected ragged [batch, (ids)], got {segment.shape}.")
        splits = tf.cast(segment.row_splits, tf.int32)
        return tf.cast(segment.values, tf.int32), splits[:-1], splits[1:] - splits[:-1]
    segment = tf.convert_to_tensor(segment)
    if segment.shape.rank != 1:
        raise ValueError(
            f"Expected a ragged batch [batch, (ids)] or one example [ids], got {segment.shape}."
        )
    return tf.cast(segment, tf.int32), tf.zeros([1], tf.int32), tf.size(segment)[tf.newaxis]
