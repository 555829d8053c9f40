"""The transformer encoder block: self-attention and feed-forward, each with a residual."""

import keras
from keras import ops

from keras_bert_core.layers.activations import ACTIVATIONS, activate
from keras_bert_core.layers.attention import MultiHeadSelfAttention
from keras_bert_core.layers.disentangled_attention import DisentangledSelfAttention
from keras_bert_core.layers.dropout import Dropout
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.fusion import unpadded_rows, unpads
from keras_bert_core.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="keras_bert_core")
class TransformerEncoderBlock(keras.layers.Layer):
    """One BERT layer: attention -> add & norm -> feed-forward -> add & norm.

    Args:
        num_heads: attention heads; must divide the input width.
        intermediate_size: width of the feed-forward layer.
        activation: `"gelu"` (exact erf, BERT's), `"gelu_approximate"` (tanh), `"relu"`, `"tanh"`.
        dropout: dropout on both residual branches.
        attention_dropout: dropout on attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        norm_first: normalize each branch's input (pre-LN) instead of the residual sum
            (post-LN, BERT's).
        initializer_range: stddev of the truncated-normal kernel initializer.
        remat: recompute the block's activations in the backward pass instead of keeping
            them (gradient checkpointing): less memory for some extra compute.
        use_bias: whether the dense layers and norms have biases (ModernBERT's have none).
        gated_feed_forward: the first feed-forward layer is `2 * intermediate_size` wide
            and its second half gates the activated first (GeGLU with `"gelu"`).
        attention_norm: with `norm_first`, whether the attention input is normalized
            (ModernBERT's first block takes the normalized embeddings as they are).
        rotary_theta: the rotary base of the attention (see `MultiHeadSelfAttention`);
            the call then takes `position_ids`.
        window: ModernBERT's sliding window of the attention, with `padding_mask` in the
            call; `None`: global attention.
        relative_buckets: DeBERTa's disentangled attention over this many relative-position
            buckets on each side (`DisentangledSelfAttention`); the call then takes
            `relative_embeddings` and `position_ids`. `None`: BERT's attention.
        max_relative_positions: with `relative_buckets`, the distance of the last bucket.

    Call arguments:
        x: `[batch, seq, width]`.
        bias: additive attention bias from `attention_bias(padding_mask)`, or `None` with
            `padding_mask`.
        output_positions: optional int32 `[batch, outputs]`: compute only these positions'
            outputs (`[batch, outputs, width]`), each still attending to the whole row. A
            last layer feeding only `[CLS]` or the masked positions skips the rest.
        return_attention: also return the attention probabilities, float32
            `[batch, num_heads, outputs, seq]`, as `(outputs, probs)` (attention-transfer
            distillation reads the last block's). Off by default.
        position_ids: int32 `[batch, seq]`, for rotary position embeddings.
        padding_mask: int32 `[batch, seq]` instead of `bias`: the attention runs in query
            chunks or key bands (`chunked_attention.attend`), never a `[seq, seq]` matrix.
        relative_embeddings: with `relative_buckets`, the encoder's `RelativeEmbeddings`.
        token_mask: int `[batch, seq]`, non-zero at real tokens: while training (and at
            inference inside `fusion.real_tokens_only`), the feed-forward half and its norm
            run on the real tokens' rows alone (the padding's outputs are then zeros, which
            no real token reads; `fusion(unpadded=False)` turns it off).

    Example:
    >>> import numpy as np
    >>> from keras_bert_core.layers import attention_bias
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    >>> x = np.random.rand(2, 6, 16).astype("float32")
    >>> bias = attention_bias(np.ones((2, 6), "int32"))
    >>> tuple(block(x, bias).shape)
    (2, 6, 16)
    >>> first = block(x, bias, output_positions=np.zeros((2, 1), "int32"))  # [CLS] alone
    >>> np.allclose(first[:, 0], block(x, bias)[:, 0], atol=1e-6)
    True
    >>> out, probs = block(x, bias, return_attention=True)
    >>> tuple(probs.shape)
    (2, 2, 6, 6)
    """

    def __init__(self, num_heads, intermediate_size, activation="gelu", dropout=0.0,
                 attention_dropout=0.0, layer_norm_eps=1e-12, norm_first=False,
                 initializer_range=0.02, remat=False, use_bias=True,
                 gated_feed_forward=False, attention_norm=True, rotary_theta=None, window=None,
                 relative_buckets=None, max_relative_positions=None, **kwargs):
        super().__init__(**kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATIONS)}")
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_eps = layer_norm_eps
        self.norm_first = norm_first
        self.initializer_range = initializer_range
        self.remat = remat
        self.use_bias = use_bias
        self.gated_feed_forward = gated_feed_forward
        self.attention_norm_enabled = attention_norm
        self.rotary_theta = rotary_theta
        self.window = window
        self.relative_buckets = relative_buckets
        self.max_relative_positions = max_relative_positions

    def build(self, input_shape):
        width = input_shape[-1]
        if width % self.num_heads:
            raise ValueError(f"input width {width} is not divisible by num_heads {self.num_heads}")
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        policy = self.dtype_policy
        common = {"dropout": self.attention_dropout, "initializer_range": self.initializer_range,
                  "use_bias": self.use_bias, "dtype": policy, "name": "attention"}
        if self.relative_buckets is None:
            self.attention = MultiHeadSelfAttention(
                self.num_heads, width // self.num_heads, rotary_theta=self.rotary_theta,
                window=self.window, **common)
        else:
            self.attention = DisentangledSelfAttention(
                self.num_heads, width // self.num_heads, buckets=self.relative_buckets,
                max_relative_positions=self.max_relative_positions,
                position_dropout=self.dropout, **common)
        self.attention_norm = None
        if self.attention_norm_enabled:
            self.attention_norm = LayerNorm(epsilon=self.layer_norm_eps, center=self.use_bias,
                                            dtype="float32", name="attention_norm")
            self.attention_norm.build(input_shape)
        self.intermediate = FlatDense(
            self.intermediate_size * (2 if self.gated_feed_forward else 1),
            use_bias=self.use_bias, kernel_initializer=init, dtype=policy, name="intermediate")
        self.output_dense = FlatDense(
            width, use_bias=self.use_bias, kernel_initializer=init, dtype=policy, name="output")
        self.output_norm = LayerNorm(epsilon=self.layer_norm_eps, center=self.use_bias,
                                     dtype="float32", name="output_norm")
        self.dropout_layer = Dropout(self.dropout, dtype=policy, name="dropout")
        self.attention.build(input_shape)
        self.intermediate.build(input_shape)
        self.output_dense.build((*input_shape[:-1], self.intermediate_size))
        self.output_norm.build(input_shape)
        self.built = True

    def _norm(self, layer, x):
        # The norm computes in float32; hand its result back in the block's compute dtype.
        return ops.cast(layer(x), self.compute_dtype)

    def _feed_forward(self, rows, training):
        # On [rows, width] from end to end: the activation then follows the intermediate
        # matmul directly, and fuses into its kernel at inference (see `FlatDense`).
        h = self.intermediate(rows)
        if self.gated_feed_forward:  # GeGLU: the second half gates the activated first
            h = activate(self.activation, h[:, :self.intermediate_size], training) * h[
                :, self.intermediate_size:]
        else:
            h = activate(self.activation, h, training)
        return self.dropout_layer(self.output_dense(h), training=training)

    def _feed_forward_half(self, x, training, token_mask):
        """The residual feed-forward and its norm (post-LN: after; pre-LN: inside), on
        `[rows, width]`: every position's, or the real tokens' alone (`unpads`)."""
        def half(rows):
            if self.norm_first:
                return rows + self._feed_forward(self._norm(self.output_norm, rows), training)
            return self._norm(self.output_norm, rows + self._feed_forward(rows, training))

        shape = ops.shape(x)
        flat = ops.reshape(x, (-1, shape[-1]))
        if token_mask is None or not unpads(training):
            return ops.reshape(half(flat), shape)
        import tensorflow as tf

        # Texts of mixed lengths leave much of a batch padding, and the feed-forward is two
        # thirds of a block's matmuls (the gain: bench/embedder_step.py's
        # `padded_feed_forward` variant).
        rows, count = unpadded_rows(token_mask, training)

        def real_rows_only():
            out = half(tf.gather(flat, rows))[:count]
            return tf.scatter_nd(rows[:count, None], out, tf.shape(flat))

        if training is True:
            return tf.reshape(real_rows_only(), shape)
        # At inference a batch without padding (long texts, all cut at the same length)
        # skips the gather and scatter. (Not while training: the gradient of a cond branch
        # cannot reach the fused kernels' saved inputs.)
        return tf.reshape(tf.cond(count < tf.shape(flat)[0], real_rows_only,
                                  lambda: half(flat)), shape)

    def call(self, x, bias, output_positions=None, training=None, return_attention=False,
             position_ids=None, padding_mask=None, relative_embeddings=None, token_mask=None):
        if output_positions is not None:
            token_mask = None  # the last block's few output rows: nothing to leave out
            if bias is not None:
                # The queries' rows of the bias: [batch, 1, outputs, seq].
                rows = ops.expand_dims(ops.expand_dims(output_positions, 1), 3)
                bias = ops.take_along_axis(bias, rows, axis=2)

        def forward(x, bias, *rest):
            # `token_mask` (int, no gradient) is closed over: `keras.remat` watches its
            # positional arguments, and warns for each that is not a float.
            rest = dict(zip(names, rest, strict=True))
            return self._forward(x, bias, rest.get("outputs"), training, return_attention,
                                 rest.get("position_ids"), rest.get("padding_mask"),
                                 rest.get("relative_embeddings"), token_mask)

        optional = {"outputs": output_positions, "position_ids": position_ids,
                    "padding_mask": padding_mask, "relative_embeddings": relative_embeddings}
        names = [name for name, value in optional.items() if value is not None]
        args = (x, bias, *(optional[name] for name in names))
        if self.remat:
            # On TensorFlow keras.remat is tf.recompute_grad, which takes positional tensors
            # only inside tf.function: close over `training`.
            return keras.remat(forward)(*args)
        return forward(*args)

    def _forward(self, x, bias, positions, training, return_attention=False,
                 position_ids=None, padding_mask=None, relative_embeddings=None,
                 token_mask=None):
        def outputs_of(states):
            if positions is None:
                return states
            return ops.take_along_axis(states, ops.expand_dims(positions, 2), axis=1)

        # Only the opt-in paths pass these arguments: the default call is unchanged.
        attention_kwargs = {"return_attention": True} if return_attention else {}
        if padding_mask is not None:
            attention_kwargs["padding_mask"] = padding_mask
            if positions is not None:
                attention_kwargs["query_index"] = positions
        if relative_embeddings is not None:
            attention_kwargs["relative_embeddings"] = relative_embeddings
        if position_ids is not None:
            attention_kwargs["position_ids"] = position_ids
            if positions is not None:
                attention_kwargs["query_position_ids"] = ops.take_along_axis(
                    position_ids, positions, axis=1)
        probs = None
        queries = outputs_of(x)
        if self.norm_first:
            normed = x if self.attention_norm is None else self._norm(self.attention_norm, x)
            attended = self.attention(outputs_of(normed), bias, context=normed,
                                      training=training, **attention_kwargs)
            if return_attention:
                attended, probs = attended
            x = queries + self.dropout_layer(attended, training=training)
            x = self._feed_forward_half(x, training, token_mask)
            return (x, probs) if return_attention else x
        attended = self.attention(queries, bias, context=x, training=training,
                                  **attention_kwargs)
        if return_attention:
            attended, probs = attended
        attended = self.dropout_layer(attended, training=training)
        x = self._norm(self.attention_norm, queries + attended)
        x = self._feed_forward_half(x, training, token_mask)
        return (x, probs) if return_attention else x

    def compute_output_shape(self, x_shape, bias_shape, output_positions_shape=None,
                             position_ids_shape=None, padding_mask_shape=None,
                             relative_embeddings_shape=None, token_mask_shape=None):
        if output_positions_shape is None:
            return x_shape
        return (*output_positions_shape, x_shape[-1])

    def compute_output_spec(self, x, bias, output_positions=None, training=None,
                            return_attention=False, position_ids=None, padding_mask=None,
                            relative_embeddings=None, token_mask=None):
        shape = self.compute_output_shape(
            x.shape, None, None if output_positions is None else output_positions.shape)
        outputs = keras.KerasTensor(shape, dtype=self.compute_dtype)
        if not return_attention:
            return outputs
        return outputs, keras.KerasTensor((x.shape[0], self.num_heads, shape[1], x.shape[1]),
                                          dtype="float32")

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "intermediate_size": self.intermediate_size,
            "activation": self.activation,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "layer_norm_eps": self.layer_norm_eps,
            "norm_first": self.norm_first,
            "initializer_range": self.initializer_range,
            "remat": self.remat,
            "use_bias": self.use_bias,
            "gated_feed_forward": self.gated_feed_forward,
            "attention_norm": self.attention_norm_enabled,
            "rotary_theta": self.rotary_theta,
            "window": self.window,
            "relative_buckets": self.relative_buckets,
            "max_relative_positions": self.max_relative_positions,
        }
