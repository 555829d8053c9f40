"""Task heads on top of the encoder: masked LM, classification (also NSP, tokens), span labeling.

Every head returns float32 logits, also under mixed precision, so losses and softmaxes are
computed at full precision.
"""

import keras
from keras import ops

from keras_bert_core.layers.activations import ACTIVATIONS, activate
from keras_bert_core.layers.attention import MASK_PENALTY
from keras_bert_core.layers.dropout import Dropout
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.layer_norm import LayerNorm


def _truncated_normal(stddev):
    return keras.initializers.TruncatedNormal(stddev=stddev)


def _tied_logits(states, table, bias):
    """float32 `states @ table^T + bias` for `states` `[rows, width]`, `table` `[vocab, width]`.

    On TensorFlow the matmul reads the table as stored (`transpose_b`), so the table's
    gradient comes out `[vocab, width]` with no transpose of it at every step, and the bias
    add is one kernel with the matmul.
    """
    if keras.backend.backend() != "tensorflow":
        return ops.cast(ops.matmul(states, ops.transpose(table)), "float32") + bias
    import tensorflow as tf

    return tf.nn.bias_add(tf.cast(tf.matmul(states, table, transpose_b=True), "float32"), bias)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head, evaluated only at the masked positions.

    The states at `masked_positions` are gathered first, then transformed
    (dense -> activation -> LayerNorm) and decoded with the transposed word-embedding table
    of `embeddings` plus a per-word `output_bias`. The decoder is tied to the table: it is the
    same variable, so it trains from both ends. With factorized embeddings (ALBERT) the
    transform maps the hidden width down to the table width.

    Args:
        embeddings: the encoder's `BertEmbeddings` (any layer with a `word_embeddings`
            table `[vocab, embedding_size]`).
        activation: `"gelu"`, `"gelu_approximate"`, `"relu"` or `"tanh"`.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.
        use_bias: whether the transform and its LayerNorm have biases (ModernBERT's have
            none; the decoder's `output_bias` is always there).

    Call arguments:
        sequence_output: `[batch, seq, hidden]`.
        masked_positions: int32 `[batch, predictions]`, indices into `seq`; `None` when
            `sequence_output` holds just the masked positions' states (the pretrainer
            computes the last layer only there).

    Returns float32 logits `[batch, predictions, vocab]`. The weights are those of `transform`
    (a dense layer, `kernel` `[hidden, embedding_size]`, `bias`), `layer_norm` (`gamma`,
    `beta`) and `output_bias` `[vocab]` (google-research's `cls/predictions/*`).

    Example:
    >>> import numpy as np
    >>> from keras_bert_core.layers import BertEmbeddings
    >>> embeddings = BertEmbeddings(vocab_size=50, hidden_size=16)
    >>> embeddings.build()
    >>> head = MaskedLMHead(embeddings)
    >>> states = np.random.rand(2, 8, 16).astype("float32")
    >>> tuple(head(states, np.array([[1, 4], [2, 0]], "int32")).shape)
    (2, 2, 50)
    >>> head.embeddings.word_embeddings is embeddings.word_embeddings
    True
    """

    def __init__(self, embeddings, activation="gelu", layer_norm_eps=1e-12,
                 initializer_range=0.02, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATIONS)}")
        if not isinstance(embeddings, keras.layers.Layer):
            raise TypeError("embeddings must be the encoder's embedding layer, "
                            f"got {type(embeddings).__name__}")
        self.embeddings = embeddings
        self.activation = activation
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.use_bias = use_bias

    def build(self, sequence_output_shape, masked_positions_shape=None):
        if not self.embeddings.built:
            self.embeddings.build()
        if not hasattr(self.embeddings, "word_embeddings"):
            raise TypeError(f"{self.embeddings.name} has no `word_embeddings` table to tie to")
        vocab_size, table_size = self.embeddings.word_embeddings.shape
        self.transform = FlatDense(
            table_size, use_bias=self.use_bias,
            kernel_initializer=_truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="transform")
        self.layer_norm = LayerNorm(
            epsilon=self.layer_norm_eps, center=self.use_bias, dtype="float32",
            name="layer_norm")
        self.transform.build(sequence_output_shape)
        self.layer_norm.build((None, None, table_size))
        self.output_bias = self.add_weight(
            shape=(vocab_size,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, sequence_output, masked_positions=None, training=None):
        states = sequence_output
        if masked_positions is not None:
            states = ops.take_along_axis(
                states, ops.expand_dims(ops.cast(masked_positions, "int32"), 2), axis=1)
        states = activate(self.activation, self.transform(states), training)
        states = ops.cast(self.layer_norm(states), self.compute_dtype)
        table = ops.cast(self.embeddings.word_embeddings, self.compute_dtype)
        flat = ops.reshape(states, (-1, table.shape[-1]))
        logits = _tied_logits(flat, table, ops.cast(self.output_bias, "float32"))
        return ops.reshape(logits, (*ops.shape(states)[:-1], table.shape[0]))

    def get_config(self):
        return {
            **super().get_config(),
            "embeddings": keras.saving.serialize_keras_object(self.embeddings),
            "activation": self.activation,
            "layer_norm_eps": self.layer_norm_eps,
            "initializer_range": self.initializer_range,
            "use_bias": self.use_bias,
        }

    @classmethod
    def from_config(cls, config):
        # Standalone, the head owns a fresh copy of the table; task models rebuild the tie.
        config = dict(config)
        embeddings = keras.saving.deserialize_keras_object(config.pop("embeddings"))
        return cls(embeddings, **config)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class ClassificationHead(keras.layers.Layer):
    """Dropout and a dense layer to `num_classes` logits, on any `[..., hidden]` input.

    On the pooled output it classifies sequences (and, with `num_classes=2`, predicts BERT's
    next sentence or ALBERT's sentence order); on the sequence output it classifies every
    token; with `num_classes=1` it scores (regression, multiple choice). With
    `hidden_activation` a hidden dense layer of the input's width comes first (RoBERTa's
    head on `<s>`: tanh; DistilBERT's on `[CLS]`: ReLU; ModernBERT's: GELU, then a
    LayerNorm, neither with a bias).

    Args:
        num_classes: number of logits per input vector.
        dropout: dropout rate on the input (and on the hidden layer's output).
        initializer_range: stddev of the truncated-normal kernel initializer.
        hidden_activation: `None` (no hidden layer), or the hidden layer's activation.
        hidden_norm_epsilon: with a hidden layer, a LayerNorm with this epsilon after its
            activation (ModernBERT's); `None` for none.
        use_bias: whether the hidden layer and its norm have biases (the output layer
            always has one).

    Call arguments:
        x: `[..., hidden]`.

    Returns float32 logits `[..., num_classes]`. The dense layer is `dense` (weights
    `kernel` `[hidden, num_classes]` and `bias` `[num_classes]`); the hidden one, if any,
    `hidden` (`[hidden, hidden]`).

    Example:
    >>> import numpy as np
    >>> head = ClassificationHead(num_classes=3)
    >>> tuple(head(np.random.rand(4, 16).astype("float32")).shape)
    (4, 3)
    >>> roberta_head = ClassificationHead(num_classes=3, hidden_activation="tanh")
    >>> tuple(roberta_head(np.random.rand(4, 16).astype("float32")).shape)
    (4, 3)
    """

    def __init__(self, num_classes, dropout=0.0, initializer_range=0.02,
                 hidden_activation=None, hidden_norm_epsilon=None, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive integer, got {num_classes!r}")
        if hidden_activation is not None and hidden_activation not in ACTIVATIONS:
            raise ValueError(f"hidden_activation {hidden_activation!r} is not None or one of "
                             f"{sorted(ACTIVATIONS)}")
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.hidden_activation = hidden_activation
        self.hidden_norm_epsilon = hidden_norm_epsilon
        self.use_bias = use_bias
        self.hidden_norm = None  # made in `build`, with the hidden layer
        self.dropout_layer = Dropout(dropout, name="dropout")
        self.hidden = None  # made in `build`: its width is the input's
        self.dense = keras.layers.Dense(
            num_classes, kernel_initializer=_truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, input_shape):
        if self.hidden_activation is not None:
            self.hidden = FlatDense(
                input_shape[-1], use_bias=self.use_bias,
                kernel_initializer=_truncated_normal(self.initializer_range),
                dtype=self.dtype_policy, name="hidden")
            self.hidden.build(input_shape)
            if self.hidden_norm_epsilon is not None:
                self.hidden_norm = LayerNorm(epsilon=self.hidden_norm_epsilon,
                                             center=self.use_bias, dtype="float32",
                                             name="hidden_norm")
                self.hidden_norm.build(input_shape)
        self.dense.build(input_shape)
        self.built = True

    def call(self, x, training=None):
        x = self.dropout_layer(x, training=training)
        if self.hidden is not None:
            x = activate(self.hidden_activation, self.hidden(x), training)
            if self.hidden_norm is not None:
                x = ops.cast(self.hidden_norm(x), self.compute_dtype)
            x = self.dropout_layer(x, training=training)
        return ops.cast(self.dense(x), "float32")

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
            "hidden_activation": self.hidden_activation,
            "hidden_norm_epsilon": self.hidden_norm_epsilon,
            "use_bias": self.use_bias,
        }


@keras.saving.register_keras_serializable(package="keras_bert_core")
class SpanLabelingHead(keras.layers.Layer):
    """Start and end logits of an answer span, one per token (extractive QA).

    Padding positions get a large negative logit, so a softmax or an argmax never picks them.

    Args:
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call arguments:
        sequence_output: `[batch, seq, hidden]`.
        padding_mask: int32 `[batch, seq]`, 0 at padding.

    Returns a dict of float32 `[batch, seq]` tensors `start_logits` and `end_logits`. The
    dense layer is `dense` (weights `kernel` `[hidden, 2]`, `bias` `[2]`; start, then end).

    Example:
    >>> import numpy as np
    >>> head = SpanLabelingHead()
    >>> out = head(np.random.rand(1, 4, 16).astype("float32"), np.array([[1, 1, 1, 0]]))
    >>> tuple(out["start_logits"].shape), bool(out["end_logits"][0, 3] < -1e8)
    ((1, 4), True)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = FlatDense(
            2, kernel_initializer=_truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, sequence_output_shape, padding_mask_shape=None):
        self.dense.build(sequence_output_shape)
        self.built = True

    def call(self, sequence_output, padding_mask):
        logits = ops.cast(self.dense(sequence_output), "float32")
        # Added, not selected: a select shares one int8 scale between the logits and the
        # penalty (quantize="int8" then rounds every logit to 0); an add keeps the logits'.
        logits = logits + ops.where(ops.expand_dims(padding_mask > 0, 2), 0.0, MASK_PENALTY)
        return {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}
