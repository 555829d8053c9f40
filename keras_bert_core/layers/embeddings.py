"""BERT's input embeddings: word + position + segment, summed, normalized, dropped out."""

import math

import keras
from keras import ops

from keras_bert_core.layers.dropout import Dropout
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.layer_norm import LayerNorm


def _truncated_normal(stddev):
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertEmbeddings(keras.layers.Layer):
    """Word, position and segment (token type) embeddings, summed, then LayerNorm and dropout.

    Args:
        vocab_size: number of word ids.
        hidden_size: output width.
        max_position_embeddings: longest sequence covered by the position table.
        type_vocab_size: number of segment ids; 0 for none (DistilBERT: segment ids are
            ignored).
        embedding_size: width of the word/position/segment tables; when it differs from
            `hidden_size` a dense projection follows the LayerNorm (ALBERT's factorization).
            `None` means `hidden_size`.
        position_embedding: `"learned"` (BERT), `"sinusoidal"` (fixed sin/cos, no weights),
            `"rotary"` (none here: the attention layers rotate queries and keys) or
            `"relative"` (none here: DeBERTa's attention layers read relative positions).
        dropout: dropout rate after the LayerNorm.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal table initializer.
        one_hot_lookup: look words up as `one_hot(ids) @ table` instead of a gather. The
            matmul has a dense gradient, which compiles under XLA inside `tf.distribute`
            and is faster on TPUs and for small vocabularies.
        position_offset: added to every position id (RoBERTa counts positions from 2).
        use_bias: whether the LayerNorm has a bias (ModernBERT's has none).

    Call arguments:
        token_ids: int32 `[batch, seq]`.
        segment_ids: int32 `[batch, seq]`.
        position_ids: optional int32 `[batch, seq]`; defaults to `0 .. seq-1` (packed
            sequences pass positions that restart at every document). `position_offset`
            is added to them.

    Example:
    >>> import numpy as np
    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=16, max_position_embeddings=32,
    ...                        type_vocab_size=2)
    >>> ids = np.array([[2, 5, 7, 3]], "int32")
    >>> tuple(layer(ids, np.zeros_like(ids)).shape)
    (1, 4, 16)
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512, type_vocab_size=2,
                 embedding_size=None, position_embedding="learned", dropout=0.0,
                 layer_norm_eps=1e-12, initializer_range=0.02, one_hot_lookup=False,
                 position_offset=0, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.embedding_size = embedding_size
        self.position_embedding = position_embedding
        self.dropout = dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.one_hot_lookup = one_hot_lookup
        self.position_offset = position_offset
        self.use_bias = use_bias
        self.table_size = embedding_size or hidden_size
        # LayerNorm statistics stay in float32 under mixed precision.
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, center=use_bias, dtype="float32", name="layer_norm")
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.projection = None
        if self.table_size != hidden_size:
            self.projection = FlatDense(
                hidden_size, kernel_initializer=_truncated_normal(initializer_range),
                dtype=self.dtype_policy, name="projection")

    def build(self, input_shape=None):
        init = _truncated_normal(self.initializer_range)
        self.word_embeddings = self.add_weight(
            shape=(self.vocab_size, self.table_size), initializer=init, name="word_embeddings")
        self.token_type_embeddings = None
        if self.type_vocab_size:
            self.token_type_embeddings = self.add_weight(
                shape=(self.type_vocab_size, self.table_size), initializer=init,
                name="token_type_embeddings")
        if self.position_embedding == "learned":
            self.position_embeddings = self.add_weight(
                shape=(self.max_position_embeddings, self.table_size), initializer=init,
                name="position_embeddings")
        else:
            self.position_embeddings = None
        self.layer_norm.build((None, None, self.table_size))
        if self.projection is not None:
            self.projection.build((None, None, self.table_size))
        self.built = True

    def _lookup(self, table, ids):
        if self.one_hot_lookup:
            one_hot = ops.one_hot(ids, ops.shape(table)[0], dtype=self.compute_dtype)
            return ops.matmul(one_hot, ops.cast(table, self.compute_dtype))
        return ops.cast(ops.take(table, ids, axis=0), self.compute_dtype)

    def _positions(self, position_ids, seq_length):
        offset = self.position_offset
        if self.position_embeddings is not None:
            if position_ids is None:
                return ops.expand_dims(self.position_embeddings[offset:offset + seq_length], 0)
            return self._lookup(self.position_embeddings, position_ids + offset)
        if position_ids is None:
            position_ids = ops.expand_dims(ops.arange(seq_length), 0)
        return _sinusoidal(position_ids + offset, self.table_size, self.compute_dtype)

    def call(self, token_ids, segment_ids, position_ids=None, training=None):
        x = self.embed_tables(token_ids, segment_ids, position_ids, training)
        if self.projection is not None:
            x = self.projection(x)
        return x

    def embed_tables(self, token_ids, segment_ids, position_ids=None, training=None):
        """The normalized sum of the tables, `[batch, seq, table_size]`: `call` without the
        projection (which `SharedEmbeddings` replaces with its own)."""
        x = self._lookup(self.word_embeddings, token_ids)
        if self.position_embedding not in ("rotary", "relative"):
            seq_length = ops.shape(token_ids)[1]
            x = x + ops.cast(self._positions(position_ids, seq_length), self.compute_dtype)
        if self.token_type_embeddings is not None:
            # Segment tables have 1 or 2 rows: the one-hot product is the cheaper lookup.
            x = x + ops.matmul(
                ops.one_hot(segment_ids, self.type_vocab_size, dtype=self.compute_dtype),
                ops.cast(self.token_type_embeddings, self.compute_dtype))
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, *args, **kwargs):
        return (*token_ids_shape, self.hidden_size)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "embedding_size": self.embedding_size,
            "position_embedding": self.position_embedding,
            "dropout": self.dropout,
            "layer_norm_eps": self.layer_norm_eps,
            "initializer_range": self.initializer_range,
            "one_hot_lookup": self.one_hot_lookup,
            "position_offset": self.position_offset,
            "use_bias": self.use_bias,
        }


@keras.saving.register_keras_serializable(package="keras_bert_core")
class SharedEmbeddings(keras.layers.Layer):
    """Another encoder's embedding tables (and their LayerNorm), projected to this encoder's
    width: ELECTRA's generator embeds with its discriminator's tables, so both train them.

    Args:
        embeddings: the `BertEmbeddings` whose tables are read (not copied).
        hidden_size: this encoder's width; a dense projection from the tables' width
            follows unless they are as wide.
        initializer_range: stddev of the projection's truncated-normal initializer.

    Call arguments and output: as `BertEmbeddings`'. It exposes the shared layer's
    `word_embeddings`, `token_type_embeddings`, `position_embeddings` and `layer_norm`, and
    its own `projection`, so `encoder_variables` names them as any encoder's.

    Example:
    >>> import numpy as np
    >>> tables = BertEmbeddings(vocab_size=100, hidden_size=32, embedding_size=16)
    >>> shared = SharedEmbeddings(tables, hidden_size=8)
    >>> ids = np.array([[2, 5, 7, 3]], "int32")
    >>> tuple(shared(ids, np.zeros_like(ids)).shape)
    (1, 4, 8)
    >>> shared.word_embeddings is tables.word_embeddings
    True
    """

    def __init__(self, embeddings, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.projection = None
        if embeddings.table_size != hidden_size:
            self.projection = FlatDense(
                hidden_size, kernel_initializer=_truncated_normal(initializer_range),
                dtype=self.dtype_policy, name="projection")

    def build(self, input_shape=None):
        if not self.embeddings.built:
            self.embeddings.build()
        if self.projection is not None:
            self.projection.build((None, None, self.embeddings.table_size))
        self.built = True

    @property
    def word_embeddings(self):
        return self.embeddings.word_embeddings

    @property
    def token_type_embeddings(self):
        return self.embeddings.token_type_embeddings

    @property
    def position_embeddings(self):
        return self.embeddings.position_embeddings

    @property
    def layer_norm(self):
        return self.embeddings.layer_norm

    def call(self, token_ids, segment_ids, position_ids=None, training=None):
        x = self.embeddings.embed_tables(token_ids, segment_ids, position_ids, training)
        return x if self.projection is None else self.projection(x)

    def compute_output_shape(self, token_ids_shape, *args, **kwargs):
        return (*token_ids_shape, self.hidden_size)

    def get_config(self):
        return {**super().get_config(),
                "embeddings": keras.saving.serialize_keras_object(self.embeddings),
                "hidden_size": self.hidden_size, "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config):
        # Standalone, it owns a fresh copy of the tables; the ELECTRA pretrainer rebuilds
        # the tie.
        config = dict(config)
        embeddings = keras.saving.deserialize_keras_object(config.pop("embeddings"))
        return cls(embeddings, **config)


def document_positions(padding_mask):
    """Position ids `[batch, seq]` that restart at 0 where each packed document starts.

    `padding_mask` holds a positive document id per real token (documents contiguous, ids
    increasing along the row) and 0 at padding. With a single document (ids all 1) this is
    `0 .. seq-1`, BERT's usual positions, so every input can take this path.
    """
    query_doc, key_doc = ops.expand_dims(padding_mask, 2), ops.expand_dims(padding_mask, 1)
    earlier_docs = ops.logical_and(ops.less(key_doc, query_doc), ops.greater(key_doc, 0))
    start = ops.sum(ops.cast(earlier_docs, "int32"), axis=-1)
    # cumsum of ones, not arange: the sequence length is unknown while building the model.
    index = ops.cumsum(ops.ones_like(padding_mask), axis=1) - 1
    return ops.cast(index - start, "int32")


def _sinusoidal(position_ids, width, dtype):
    """The Transformer's fixed sin/cos position encoding, `[batch or 1, seq, width]`."""
    half = width // 2
    inv_freq = ops.exp(ops.arange(half, dtype="float32") * (-math.log(10000.0) / max(half - 1, 1)))
    angles = ops.expand_dims(ops.cast(position_ids, "float32"), -1) * inv_freq
    encoding = ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)
    if width % 2:
        encoding = ops.pad(encoding, [(0, 0), (0, 0), (0, 1)])
    return ops.cast(encoding, dtype)
