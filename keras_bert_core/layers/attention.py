"""Multi-head self-attention with an int32 padding (or document) mask."""

import keras
from keras import ops

from keras_bert_core.layers.attention_masks import MASK_PENALTY, allowed_keys, attention_bias
from keras_bert_core.layers.chunked_attention import attend
from keras_bert_core.layers.dropout import Dropout
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.rotary import rotary_tables, rotate

__all__ = ["MASK_PENALTY", "MultiHeadSelfAttention", "attention_bias"]


def query_rows_bias(padding_mask, query_index, window=None):
    """The attention bias `[batch, 1, queries, seq]` of the queries at `query_index`
    (int32 `[batch, queries]`) alone, within a sliding `window` as `attend` counts it: what a
    last layer computing a few positions needs, without a `[seq, seq]` matrix."""
    allowed = allowed_keys(ops.take_along_axis(padding_mask, query_index, axis=1), padding_mask)
    if window is not None:
        keys = ops.cumsum(ops.ones_like(padding_mask), axis=1) - 1
        distance = ops.abs(ops.expand_dims(keys, 1) - ops.expand_dims(query_index, 2))
        allowed = ops.logical_and(allowed, ops.less_equal(distance, window // 2))
    return ops.cast(ops.expand_dims(ops.where(allowed, 0.0, MASK_PENALTY), 1), "float32")


@keras.saving.register_keras_serializable(package="keras_bert_core")
class MultiHeadSelfAttention(keras.layers.Layer):
    """BERT's self-attention: query/key/value projections, scaled dot product, output projection.

    Scores and softmax run in float32 under mixed precision.

    Args:
        num_heads: number of attention heads.
        head_size: width of every head; the layer's width is `num_heads * head_size`.
        dropout: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.
        use_bias: whether the projections have biases (ModernBERT's have none).
        rotary_theta: the base of rotary position embeddings on queries and keys (the
            call then takes `position_ids`); `None` for none (BERT).
        window: with `padding_mask` in the call, ModernBERT's sliding window (see
            `chunked_attention.attend`); `None`: global attention.

    Call arguments:
        x: the queries' states `[batch, queries, num_heads * head_size]`.
        bias: additive float bias `[batch, 1, queries, keys]` from `attention_bias`.
        context: the states attended to `[batch, keys, width]`; `None` means `x`
            (self-attention over all positions). Passing only some positions' states as
            `x` computes the outputs of those positions alone.
        return_attention: also return the attention probabilities, float32
            `[batch, num_heads, queries, keys]` (before dropout), as `(outputs, probs)`:
            what attention-transfer distillation compares. Off by default.
        position_ids: int32 `[batch, keys]`, the context's positions (rotary only).
        query_position_ids: int32 `[batch, queries]`, the queries' positions where `x` is
            not the context; `None` means `position_ids`.
        padding_mask: int32 `[batch, keys]` instead of `bias` (pass `bias=None`): attention
            runs through `chunked_attention.attend` (global in query chunks, or within
            `window`), never holding a `[keys, keys]` score matrix.
        query_index: with `padding_mask` and queries that are some positions of the context:
            int32 `[batch, queries]`, their indices.

    Example:
    >>> import numpy as np
    >>> layer = MultiHeadSelfAttention(num_heads=2, head_size=8)
    >>> x = np.random.rand(1, 5, 16).astype("float32")
    >>> mask = np.array([[1, 1, 1, 0, 0]], "int32")
    >>> tuple(layer(x, attention_bias(mask)).shape)
    (1, 5, 16)
    >>> out, probs = layer(x, attention_bias(mask), return_attention=True)
    >>> tuple(probs.shape), np.allclose(probs[0, :, :, 3:], 0.0)
    ((1, 2, 5, 5), True)
    """

    def __init__(self, num_heads, head_size, dropout=0.0, initializer_range=0.02,
                 use_bias=True, rotary_theta=None, window=None, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_size = head_size
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.use_bias = use_bias
        self.rotary_theta = rotary_theta
        self.window = window
        width = num_heads * head_size

        def dense(name):
            return FlatDense(
                width, use_bias=use_bias, kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range),
                dtype=self.dtype_policy, name=name)

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output")
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build(input_shape)
        self.built = True

    def call(self, x, bias, context=None, training=None, return_attention=False,
             position_ids=None, query_position_ids=None, padding_mask=None, query_index=None):
        # The projections run on [rows, width] and their outputs go straight to
        # [batch, seq, heads, head_size]: no [batch, seq, width] step in between, one shape
        # for all three when the context is `x` (bench/saved_model_profile.py counts the
        # ops). (Explicit sizes, not -1: a batch of 0 rows must reshape too.)
        width = self.num_heads * self.head_size
        batch, queries = ops.shape(x)[0], ops.shape(x)[1]
        query_heads = (batch, queries, self.num_heads, self.head_size)
        rows = ops.reshape(x, (-1, ops.shape(x)[-1]))
        if context is None or context is x:
            context_rows, key_heads = rows, query_heads
        else:
            context_rows = ops.reshape(context, (-1, ops.shape(context)[-1]))
            key_heads = (batch, ops.shape(context)[1], self.num_heads, self.head_size)
        scale = self.head_size**-0.5
        query = ops.reshape(self.query(rows), query_heads)
        key = ops.reshape(self.key(context_rows), key_heads)
        if self.rotary_theta is not None:
            tables = rotary_tables(position_ids, self.head_size, self.rotary_theta)
            key = rotate(key, *tables)
            if query_position_ids is not None:
                tables = rotary_tables(query_position_ids, self.head_size, self.rotary_theta)
            query = rotate(query, *tables)
        value = ops.reshape(self.value(context_rows), key_heads)
        float_probs = None
        if padding_mask is not None and query_index is None and not return_attention:
            query = query * ops.cast(scale, self.compute_dtype)  # `attend` takes them scaled
            attended = attend(*(ops.transpose(t, (0, 2, 1, 3)) for t in (query, key, value)),
                              padding_mask, window=self.window,
                              dropout=lambda p: self.dropout_layer(p, training=training))
        else:
            if padding_mask is not None:
                # Some queries' rows alone, or every row where the probabilities are asked
                # for (distillation's attention transfer: they are a [seq, seq] matrix).
                if query_index is None:
                    query_index = ops.cumsum(ops.ones_like(padding_mask), axis=1) - 1
                bias = query_rows_bias(padding_mask, query_index, self.window)
            # Scaled after the matmul, then the bias: on CPU, grappler fuses the matmul, the
            # scale and the bias into one oneDNN kernel (`_MklFusedBatchMatMulV2`), no pass
            # of their own over [batch, heads, seq, seq] (bench/saved_model_profile.py).
            scores = ops.matmul(ops.transpose(query, (0, 2, 1, 3)),
                                ops.transpose(key, (0, 2, 3, 1)))
            scores = ops.cast(scores, "float32") * scale + ops.cast(bias, "float32")
            float_probs = ops.softmax(scores, axis=-1)
            probs = ops.cast(float_probs, self.compute_dtype)
            probs = self.dropout_layer(probs, training=training)
            attended = ops.matmul(probs, ops.transpose(value, (0, 2, 1, 3)))
        attended = ops.reshape(ops.transpose(attended, (0, 2, 1, 3)), (-1, width))
        outputs = ops.reshape(self.output_dense(attended), (batch, queries, width))
        if return_attention:
            return outputs, float_probs
        return outputs

    def compute_output_shape(self, input_shape, *args, **kwargs):
        return input_shape

    def compute_output_spec(self, x, bias, context=None, training=None,
                            return_attention=False, position_ids=None, query_position_ids=None,
                            padding_mask=None, query_index=None):
        outputs = keras.KerasTensor(x.shape, dtype=self.compute_dtype)
        if not return_attention:
            return outputs
        keys = (x if context is None else context).shape[1]
        return outputs, keras.KerasTensor((x.shape[0], self.num_heads, x.shape[1], keys),
                                          dtype="float32")

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "head_size": self.head_size,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
            "use_bias": self.use_bias,
            "rotary_theta": self.rotary_theta,
            "window": self.window,
        }
