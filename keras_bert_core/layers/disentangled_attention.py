"""DeBERTa's disentangled self-attention: content and relative position attend to each
other."""

import math

import keras
from keras import ops

from keras_bert_core.layers.attention import MultiHeadSelfAttention
from keras_bert_core.layers.dropout import Dropout
from keras_bert_core.layers.relative_positions import (
    log_bucket_positions,
    relative_position_buckets,
)

# Content-to-content, content-to-position and position-to-content: the scores scale by
# sqrt(head_size * 3).
_TERMS = 3


@keras.saving.register_keras_serializable(package="keras_bert_core")
class DisentangledSelfAttention(MultiHeadSelfAttention):
    """DeBERTa-v2/v3 self-attention: BERT's content-to-content scores plus
    content-to-position (a query's content against the key's relative position) and
    position-to-content (the query's relative position against the key's content), over
    log-bucketed relative positions (`layers.relative_positions`). The positions' queries
    and keys are the relative embeddings through this layer's own query and key projections
    (`share_att_key`), and the three terms sum before one scaling by
    `sqrt(3 * head_size)`. Absolute positions play no part.

    Args:
        num_heads, head_size, dropout, initializer_range, use_bias: as
            `MultiHeadSelfAttention`.
        buckets: the relative-position buckets on each side of 0 (DeBERTa-v3: 256).
        max_relative_positions: the distance the log buckets reach their last at.
        position_dropout: dropout on the relative embeddings (DeBERTa's hidden dropout).

    Call arguments:
        x, bias, context, training, return_attention: as `MultiHeadSelfAttention`.
        relative_embeddings: the normalized table `[2 * buckets, width]` of
            `RelativeEmbeddings`.
        position_ids: int32 `[batch, keys]`, the context's positions.
        query_position_ids: int32 `[batch, queries]`, the queries' positions where `x` is
            not the context; `None` means `position_ids`.

    Example:
    >>> import numpy as np
    >>> from keras_bert_core.layers import attention_bias
    >>> from keras_bert_core.layers.relative_positions import RelativeEmbeddings
    >>> layer = DisentangledSelfAttention(num_heads=2, head_size=8, buckets=4,
    ...                                   max_relative_positions=16)
    >>> x = np.random.rand(1, 5, 16).astype("float32")
    >>> table = RelativeEmbeddings(4, 16)(x)
    >>> positions = np.arange(5, dtype="int32")[None]
    >>> out = layer(x, attention_bias(np.ones((1, 5), "int32")), relative_embeddings=table,
    ...             position_ids=positions)
    >>> tuple(out.shape)
    (1, 5, 16)
    """

    def __init__(self, num_heads, head_size, buckets=256, max_relative_positions=512,
                 position_dropout=0.0, **kwargs):
        super().__init__(num_heads, head_size, **kwargs)
        self.buckets = buckets
        self.max_relative_positions = max_relative_positions
        self.position_dropout = position_dropout
        self.position_dropout_layer = Dropout(
            position_dropout, dtype=self.dtype_policy, name="position_dropout")

    def _heads(self, dense, rows, shape):
        # [rows, width] -> [batch, heads, seq, head_size]
        return ops.transpose(ops.reshape(dense(rows), shape), (0, 2, 1, 3))

    def call(self, x, bias, context=None, training=None, return_attention=False,
             relative_embeddings=None, position_ids=None, query_position_ids=None):
        width = self.num_heads * self.head_size
        batch, queries = ops.shape(x)[0], ops.shape(x)[1]
        context = x if context is None else context
        keys = ops.shape(context)[1]
        rows = ops.reshape(x, (-1, ops.shape(x)[-1]))
        context_rows = rows if context is x else ops.reshape(
            context, (-1, ops.shape(context)[-1]))
        scale = ops.cast((_TERMS * self.head_size) ** -0.5, self.compute_dtype)
        query = self._heads(self.query, rows,
                            (batch, queries, self.num_heads, self.head_size)) * scale
        key_heads = (batch, keys, self.num_heads, self.head_size)
        key = self._heads(self.key, context_rows, key_heads)
        value = self._heads(self.value, context_rows, key_heads)

        # The positions' keys and (scaled) queries, of the rows the keys' distances reach:
        # [heads, rows, head_size].
        first, rows = self._reached_rows(keys)
        table = self.position_dropout_layer(
            ops.slice(relative_embeddings, (first, 0), (rows, width)), training=training)
        table_heads = (1, rows, self.num_heads, self.head_size)
        position_key = self._heads(self.key, table, table_heads)[0]
        position_query = self._heads(self.query, table, table_heads)[0] * scale

        if query_position_ids is None:
            query_position_ids = position_ids
        # Row of each (query, key) pair's bucket in those rows: [batch, 1, queries, keys].
        index = ops.clip(relative_position_buckets(
            query_position_ids, position_ids, self.buckets, self.max_relative_positions)
            + self.buckets, 0, 2 * self.buckets - 1) - first
        index = ops.expand_dims(index, 1)
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        # Content to position: each query against every bucket, then its pairs' buckets.
        content_to_position = ops.einsum("bhqd,hrd->bhqr", query, position_key)
        scores = scores + _take_buckets(content_to_position, index)
        # Position to content: each key against every bucket's query; a key's bucket seen
        # from the query is the query's seen from the key (the buckets are odd in distance).
        position_to_content = ops.einsum("bhkd,hrd->bhkr", key, position_query)
        scores = scores + ops.transpose(_take_buckets(
            position_to_content, ops.transpose(index, (0, 1, 3, 2))), (0, 1, 3, 2))

        scores = ops.cast(scores, "float32") + ops.cast(bias, "float32")
        float_probs = ops.softmax(scores, axis=-1)
        probs = self.dropout_layer(ops.cast(float_probs, self.compute_dtype),
                                   training=training)
        attended = ops.matmul(probs, value)
        attended = ops.reshape(ops.transpose(attended, (0, 2, 1, 3)), (-1, width))
        outputs = ops.reshape(self.output_dense(attended), (batch, queries, width))
        if return_attention:
            return outputs, float_probs
        return outputs

    def _reached_rows(self, keys):
        """`(first, rows)`: the rows of the relative table that `keys` tokens reach (the
        buckets up to their longest distance's, and one more each side for a float
        rounding), so that short sequences project and score those alone (the whole table
        holds 2 * buckets rows). Python ints where the length is static (XLA needs them),
        else tensors."""
        if isinstance(keys, int):
            reach = _bucket(max(keys - 1, 0), self.buckets, self.max_relative_positions) + 1
            reach = min(reach, self.buckets)
            first = self.buckets - reach
            return first, min(self.buckets + reach, 2 * self.buckets - 1) - first + 1
        reach = ops.minimum(log_bucket_positions(
            ops.maximum(keys - 1, 0), self.buckets, self.max_relative_positions) + 1,
            self.buckets)
        first = self.buckets - reach
        return first, ops.minimum(self.buckets + reach, 2 * self.buckets - 1) - first + 1

    def compute_output_spec(self, x, bias, context=None, training=None,
                            return_attention=False, relative_embeddings=None,
                            position_ids=None, query_position_ids=None):
        return super().compute_output_spec(x, bias, context, training, return_attention)

    def get_config(self):
        return {**super().get_config(), "buckets": self.buckets,
                "max_relative_positions": self.max_relative_positions,
                "position_dropout": self.position_dropout}


def _bucket(distance, buckets, max_distance):
    """`log_bucket_positions` of a non-negative Python int, in float64 (it may differ by
    one from the float32 bucket: `_reached_rows` reaches one row further)."""
    mid = buckets // 2
    if distance <= mid:
        return distance
    return math.ceil(math.log(distance / mid) / math.log((max_distance - 1) / mid)
                     * (mid - 1)) + mid


def _take_buckets(scores, index):
    """`scores[b, h, i, index[b, 0, i, j]]`: `[batch, heads, rows, buckets]` scores read at
    each pair's bucket (`index` int32 `[batch, 1, rows, columns]`)."""
    shape = ops.shape(scores)
    index = ops.broadcast_to(index, (shape[0], shape[1], ops.shape(index)[2],
                                     ops.shape(index)[3]))
    return ops.take_along_axis(scores, index, axis=-1)
