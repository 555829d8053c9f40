"""Losses of embedding models, sentence-transformers' recipe as `keras.losses.Loss`: the
in-batch-negatives contrastive loss (global-batch negatives under `tf.distribute`), the
cosine-similarity loss of scored pairs, the triplet loss and Matryoshka training."""

import keras
import tensorflow as tf
from keras import ops

TRIPLET_DISTANCES = ("euclidean", "cosine", "manhattan")
# torch's pairwise_distance adds this to the difference (sentence-transformers' triplet
# distance); it also keeps the gradient of a zero distance finite.
_PAIRWISE_EPSILON = 1e-6


def _unit(vectors):
    """`vectors` / their L2 norm along the last axis (a zero vector stays zero)."""
    squares = ops.sum(ops.square(vectors), axis=-1, keepdims=True)
    return vectors * ops.rsqrt(ops.maximum(squares, 1e-24))


def _columns(y_pred, at_least, loss):
    """`y_pred` as float32 [B, C, D], with a clear error when C is known and too small."""
    y_pred = ops.cast(y_pred, "float32")
    if len(y_pred.shape) != 3:
        raise ValueError(f"{loss} needs y_pred of shape [batch, columns, dim]; "
                         f"got shape {tuple(y_pred.shape)}")
    columns = y_pred.shape[1]
    if columns is not None and columns < at_least:
        raise ValueError(f"{loss} needs at least {at_least} columns per example; "
                         f"y_pred has {columns} (shape {tuple(y_pred.shape)})")
    return y_pred


def global_batch(y_pred):
    """All replicas' `y_pred` [R*B, ...] in replica-id order, and the row of this replica's
    first example in it. Without `tf.distribute` (or with one replica) that is `y_pred`, 0.

    `all_gather`'s gradient sums the replicas' gradients of the gathered rows and hands each
    replica its own rows, so a loss over the gathered batch trains each replica's encoder
    with the other replicas' terms too: N replicas compute one device's step with the
    N-times batch."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return y_pred, 0
    gathered = context.all_gather(y_pred, axis=0)
    offset = tf.cast(context.replica_id_in_sync_group, "int32") * tf.shape(y_pred)[0]
    return gathered, offset


class EmbeddingLoss(keras.losses.Loss):
    """Base of this module's losses: `y_true` may be None (`fit(x)` without y) for the losses
    that take no labels (`needs_labels` False); the others say they need them."""

    needs_labels = False
    # Whether `call` gathers from every replica under `tf.distribute` (see `TaskModel`).
    synchronizes_replicas = False

    def __call__(self, y_true, y_pred, sample_weight=None):
        if y_true is None:
            if self.needs_labels:
                raise ValueError(f"{type(self).__name__} needs labels (y): "
                                 "one score per pair")
            y_true = ops.zeros(ops.shape(y_pred)[:1])
        return super().__call__(y_true, y_pred, sample_weight)


def _cross_entropy(scores, labels):
    """Per-row softmax cross-entropy of `scores` [B, K] with the integer `labels` [B]."""
    target = ops.take_along_axis(scores, ops.expand_dims(labels, 1), axis=1)[:, 0]
    return ops.logsumexp(scores, axis=1) - target


@keras.saving.register_keras_serializable(package="keras_bert_core")
class ContrastiveLoss(EmbeddingLoss):
    """Multiple-negatives ranking loss (InfoNCE with in-batch negatives), as
    sentence-transformers' `MultipleNegativesRankingLoss`: each anchor (column 0) must pick
    its positive (column 1) among every positive and hard negative (columns 2..) of the
    batch, by softmax over `scale` * cosine similarity. `y_true` is ignored.

    Under a `tf.distribute` strategy with several replicas the candidates are those of the
    global batch (gathered from every replica), so the loss and its gradients are one
    device's with the whole batch.

    Args:
        scale: the factor on the cosine similarities (1 / temperature).
        symmetric: also let each positive pick its anchor among the batch's anchors, and
            average both directions (sentence-transformers'
            `MultipleNegativesSymmetricRankingLoss`).
        reduction, name, dtype: as `keras.losses.Loss`.

    Example:
    >>> import numpy as np
    >>> y_pred = np.array([[[1.0, 0.0], [1.0, 0.1]], [[0.0, 1.0], [0.1, 1.0]]], "float32")
    >>> loss = ContrastiveLoss(scale=20.0)
    >>> round(float(loss(np.zeros(2), y_pred)), 6)
    0.0
    >>> swapped = np.stack([y_pred[:, 0], y_pred[::-1, 1]], axis=1)  # each other's positive
    >>> round(float(loss(np.zeros(2), swapped)), 2)
    17.91
    """

    synchronizes_replicas = True  # the global batch's candidates

    def __init__(self, scale=20.0, symmetric=False, reduction="sum_over_batch_size",
                 name="contrastive_loss", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    def call(self, y_true, y_pred):
        del y_true  # the labels are the positions of the positives
        y_pred = _columns(y_pred, 2, "ContrastiveLoss")
        everyone, offset = global_batch(y_pred)  # [G, C, D]
        columns, dim = ops.shape(y_pred)[1], ops.shape(y_pred)[2]
        anchors = _unit(y_pred[:, 0])  # [B, D]
        candidates = ops.reshape(_unit(everyone[:, 1:]), (-1, dim))  # [G * (C-1), D]
        rows = offset + ops.arange(ops.shape(y_pred)[0], dtype="int32")  # in the global batch
        # Candidates run example by example: example g's positive is row g * (C-1).
        forward = _cross_entropy(self.scale * ops.matmul(anchors, ops.transpose(candidates)),
                                 rows * ops.cast(columns - 1, "int32"))
        if not self.symmetric:
            return forward
        positives = _unit(y_pred[:, 1])
        every_anchor = _unit(everyone[:, 0])  # [G, D]
        backward = _cross_entropy(
            self.scale * ops.matmul(positives, ops.transpose(every_anchor)), rows)
        return (forward + backward) / 2

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric}


@keras.saving.register_keras_serializable(package="keras_bert_core")
class CosineSimilarityLoss(EmbeddingLoss):
    """Squared error between cos(column 0, column 1) and the pair's score `y_true` [B]
    (sentence-transformers' `CosineSimilarityLoss`; scores usually in [0, 1] or [-1, 1]).

    Example:
    >>> import numpy as np
    >>> y_pred = np.array([[[1.0, 0.0], [0.0, 2.0]]], "float32")  # cosine 0
    >>> float(CosineSimilarityLoss()(np.array([0.5]), y_pred))
    0.25
    """

    needs_labels = True

    def __init__(self, reduction="sum_over_batch_size", name="cosine_similarity_loss",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        y_pred = _columns(y_pred, 2, "CosineSimilarityLoss")
        cosine = ops.sum(_unit(y_pred[:, 0]) * _unit(y_pred[:, 1]), axis=-1)
        return ops.square(cosine - ops.reshape(ops.cast(y_true, "float32"), (-1,)))


@keras.saving.register_keras_serializable(package="keras_bert_core")
class TripletLoss(EmbeddingLoss):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0) over columns 0, 1, 2, as
    sentence-transformers' `TripletLoss` (whose defaults these are: Euclidean distance,
    margin 5). `y_true` is ignored.

    Args:
        margin: how much farther than the positive the negative must be.
        distance: "euclidean", "cosine" (1 - cosine similarity) or "manhattan".
        reduction, name, dtype: as `keras.losses.Loss`.

    Example:
    >>> import numpy as np
    >>> y_pred = np.array([[[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]], "float32")  # 5 and 10 away
    >>> round(float(TripletLoss(margin=6.0)(np.zeros(1), y_pred)), 4)
    1.0
    """

    def __init__(self, margin=5.0, distance="euclidean", reduction="sum_over_batch_size",
                 name="triplet_loss", dtype=None):
        if distance not in TRIPLET_DISTANCES:
            raise ValueError(f"unknown triplet distance {distance!r}; "
                             f"expected one of {', '.join(TRIPLET_DISTANCES)}")
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.margin = float(margin)
        self.distance = distance

    def _distance(self, a, b):
        if self.distance == "cosine":
            return 1.0 - ops.sum(_unit(a) * _unit(b), axis=-1)
        difference = a - b + _PAIRWISE_EPSILON
        if self.distance == "manhattan":
            return ops.sum(ops.abs(difference), axis=-1)
        return ops.sqrt(ops.sum(ops.square(difference), axis=-1))

    def call(self, y_true, y_pred):
        del y_true
        y_pred = _columns(y_pred, 3, "TripletLoss")
        anchors = y_pred[:, 0]
        return ops.relu(self._distance(anchors, y_pred[:, 1])
                        - self._distance(anchors, y_pred[:, 2]) + self.margin)

    def get_config(self):
        return {**super().get_config(), "margin": self.margin, "distance": self.distance}


@keras.saving.register_keras_serializable(package="keras_bert_core")
class MatryoshkaLoss(EmbeddingLoss):
    """`loss` on the vectors cut to each of `dims` (their first d values), weighted and
    summed (sentence-transformers' `MatryoshkaLoss`): the model learns vectors whose
    prefixes are embeddings too, so users can cut them to save memory.

    Args:
        loss: the inner embedding loss (one of this module's).
        dims: the widths to train, e.g. (768, 512, 256, 128, 64).
        weights: one weight per width (default: 1 each).
        reduction, name, dtype: as `keras.losses.Loss`.

    Example:
    >>> import numpy as np
    >>> y_pred = np.array([[[1.0, 0.0, 5.0], [0.0, 1.0, 5.0]]], "float32")
    >>> loss = MatryoshkaLoss(CosineSimilarityLoss(), dims=(3, 2), weights=(1.0, 0.5))
    >>> round(float(loss(np.array([1.0]), y_pred)), 4)  # (1 - 25/26)^2 + 0.5 * (1 - 0)^2
    0.5015
    """

    def __init__(self, loss, dims, weights=None, reduction="sum_over_batch_size",
                 name="matryoshka_loss", dtype=None):
        dims = tuple(int(d) for d in dims)
        if not dims or min(dims) < 1:
            raise ValueError(f"MatryoshkaLoss needs positive dims; got {dims}")
        weights = (1.0,) * len(dims) if weights is None else tuple(float(w) for w in weights)
        if len(weights) != len(dims):
            raise ValueError(f"MatryoshkaLoss has {len(dims)} dims {dims} but "
                             f"{len(weights)} weights {weights}")
        if isinstance(loss, dict):
            loss = keras.saving.deserialize_keras_object(loss)
        if not isinstance(loss, EmbeddingLoss):
            raise ValueError("MatryoshkaLoss wraps one of keras_bert_core's embedding losses "
                             f"(ContrastiveLoss, ...); got {loss!r}")
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.loss = loss
        self.dims = dims
        self.weights = weights
        self.needs_labels = loss.needs_labels
        self.synchronizes_replicas = loss.synchronizes_replicas

    def call(self, y_true, y_pred):
        width = y_pred.shape[-1]
        if width is not None and max(self.dims) > width:
            raise ValueError(f"MatryoshkaLoss dims {self.dims} go past the vectors' "
                             f"width {width}")
        return sum(weight * self.loss.call(y_true, y_pred[..., :dim])
                   for dim, weight in zip(self.dims, self.weights, strict=True))

    def get_config(self):
        return {**super().get_config(), "loss": keras.saving.serialize_keras_object(self.loss),
                "dims": list(self.dims), "weights": list(self.weights)}
