"""DeBERTa's relative positions: log-bucketed distances between tokens, and the table of
their embeddings that every attention layer reads."""

import keras
from keras import ops

from keras_bert_core.layers.layer_norm import LayerNorm


def log_bucket_positions(relative, buckets, max_distance):
    """DeBERTa's buckets of relative positions (int32, the shape of `relative`): distances
    under `buckets // 2` as they are, longer ones on a log scale that reaches
    `buckets // 2 - 1` at `max_distance`, the sign kept (Hugging Face's
    `make_log_bucket_position`, in float32 as it computes them).

    Example:
    >>> import numpy as np
    >>> buckets = log_bucket_positions(np.array([0, 3, -3, 200, -1000], "int32"), 8, 512)
    >>> np.asarray(buckets).tolist()
    [0, 3, -3, 7, -8]
    """
    relative = ops.convert_to_tensor(relative, "int32")
    mid = buckets // 2
    distance = ops.abs(relative)
    near = ops.less(distance, mid)
    # Near distances get a dummy far one (mid - 1) so that the log stays finite.
    far = ops.cast(ops.where(near, mid - 1, distance), "float32")
    scale = ops.log(ops.convert_to_tensor((max_distance - 1) / mid, "float32"))
    log_position = ops.ceil(ops.log(far / mid) / scale * (mid - 1)) + mid
    signed = ops.cast(log_position, "int32") * ops.sign(relative)
    return ops.where(ops.less_equal(ops.cast(far, "int32"), mid), relative, signed)


def relative_position_buckets(query_positions, key_positions, buckets, max_distance):
    """int32 `[batch, queries, keys]`: the bucket of each query's position less each key's
    (positions int32 `[batch, queries]` and `[batch, keys]`)."""
    relative = ops.expand_dims(query_positions, 2) - ops.expand_dims(key_positions, 1)
    return log_bucket_positions(relative, buckets, max_distance)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class RelativeEmbeddings(keras.layers.Layer):
    """DeBERTa's table of relative-position embeddings, `2 * buckets` rows (bucket `b` at
    row `b + buckets`), normalized by its LayerNorm (`norm_rel_ebd="layer_norm"`): one
    table for the whole encoder, which every `DisentangledSelfAttention` projects with its
    own query and key projections.

    Args:
        buckets: the position buckets on each side of 0 (DeBERTa-v3: 256).
        hidden_size: the table's width.
        layer_norm_eps: the LayerNorm's epsilon.
        initializer_range: stddev of the truncated-normal table initializer.

    Call arguments:
        x: any tensor of the encoder (ignored but for ordering the call in a graph).

    Returns the normalized table, `[2 * buckets, hidden_size]`, in the compute dtype.

    Example:
    >>> import numpy as np
    >>> table = RelativeEmbeddings(buckets=4, hidden_size=8)
    >>> tuple(table(np.zeros((1, 3, 8), "float32")).shape)
    (8, 8)
    """

    def __init__(self, buckets, hidden_size, layer_norm_eps=1e-7, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.buckets = buckets
        self.hidden_size = hidden_size
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.layer_norm = LayerNorm(epsilon=layer_norm_eps, dtype="float32", name="layer_norm")

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            shape=(2 * self.buckets, self.hidden_size), name="embeddings",
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.layer_norm.build((None, self.hidden_size))
        self.built = True

    def call(self, x, training=None):
        return ops.cast(self.layer_norm(self.embeddings), self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (2 * self.buckets, self.hidden_size)

    def get_config(self):
        return {**super().get_config(), "buckets": self.buckets,
                "hidden_size": self.hidden_size, "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range}
