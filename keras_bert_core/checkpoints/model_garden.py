"""TF Model Garden (`official.nlp.modeling.networks.BertEncoder`) TF2 object-based checkpoints.

Their variable keys follow positional tracking (`encoder/layer_with_weights-4/...`), which
shifts with every optional layer. The checkpoint's object graph also records each layer's
attribute name (`_embedding_layer`, `_transformer_layers/0/_attention_layer/_query_dense`),
so weights are found by those names, under whatever prefix holds the encoder (an encoder
saved alone, or inside a pretrainer or classifier).

Without a `bert_config.json` beside the checkpoint, the config is inferred from the weight
shapes. The activation cannot be seen in shapes: it is taken to be BERT's exact (erf) GELU.
Model Garden's own default is the tanh approximation; pass
`config=BertConfig(..., hidden_act="gelu_approximate")` for a model trained with it.
Pre-LayerNorm (`norm_first=True`) Model Garden encoders are not supported: they lack our
final LayerNorm, and their weights, named and shaped like post-LN ones, cannot tell them apart.
"""

from __future__ import annotations

import heapq
import re

from keras_bert_core.checkpoints.google_research import config_beside
from keras_bert_core.checkpoints.readers import RenamedReader, open_tf_checkpoint
from keras_bert_core.checkpoints.weights import (
    assign_checked,
    einsum_source,
    encoder_variables,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models import BertEncoder

_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# Keras' positional aliases of a layer's children; the attribute names say more.
_POSITIONAL = re.compile(r"layer(_with_weights)?-\d+")
_ANCHOR = "_embedding_layer/embeddings"
_TOP = {
    "embeddings/word_embeddings": "_embedding_layer/embeddings",
    "embeddings/position_embeddings": "_position_embedding_layer/embeddings",
    "embeddings/token_type_embeddings": "_type_embedding_layer/embeddings",
    "embeddings/LayerNorm/": "_embedding_norm_layer/",
    "embeddings/projection/": "_embedding_projection/",
    "pooler/dense/": "_pooler_layer/",
}
_BLOCK = {
    "attention/self/query": "_attention_layer/_query_dense",
    "attention/self/key": "_attention_layer/_key_dense",
    "attention/self/value": "_attention_layer/_value_dense",
    "attention/output/dense": "_attention_layer/_output_dense",
    "attention/output/LayerNorm": "_attention_layer_norm",
    "intermediate/dense": "_intermediate_dense",
    "output/dense": "_output_dense",
    "output/LayerNorm": "_output_layer_norm",
}


def matches(reader):
    """Whether a TensorFlow checkpoint is object-based (written by `tf.train.Checkpoint`)."""
    return _GRAPH_KEY in reader.shapes


def object_paths(reader):
    """Attribute path -> checkpoint key for every variable of an object-based checkpoint."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        graph.ParseFromString(reader.read(_GRAPH_KEY))
    except Exception as e:  # DecodeError
        raise CheckpointError(f"{reader.path}: unreadable object graph ({e})") from None
    # Cheapest path first, counting positional aliases before length: each variable is named
    # by attributes wherever the graph has them (`_transformer_layers/0` over the shorter
    # `layer_with_weights-4`), and by position only where nothing else reaches it.
    costs, paths, keys = {0: (0, 0)}, {0: ""}, {}
    heap = [((0, 0), 0)]
    while heap:
        cost, node_id = heapq.heappop(heap)
        if cost > costs[node_id]:
            continue
        for attribute in graph.nodes[node_id].attributes:
            if attribute.name == "VARIABLE_VALUE":
                keys[paths[node_id]] = attribute.checkpoint_key
        for child in graph.nodes[node_id].children:
            step = (cost[0] + bool(_POSITIONAL.fullmatch(child.local_name)), cost[1] + 1)
            if step < costs.get(child.node_id, (float("inf"),)):
                costs[child.node_id] = step
                paths[child.node_id] = paths[node_id] + child.local_name + "/"
                heapq.heappush(heap, (step, child.node_id))
    return {path.rstrip("/"): key for path, key in keys.items()}


def _encoder_prefix(names, path):
    prefixes = sorted(name[: -len(_ANCHOR)] for name in names
                      if name == _ANCHOR or name.endswith("/" + _ANCHOR))
    if not prefixes:
        raise CheckpointError(
            f"{path}: an object-based TF2 checkpoint without a Model Garden BertEncoder "
            f"(looked for a variable at .../{_ANCHOR}); its variables include "
            f"{sorted(names)[:8]}")
    if len(prefixes) > 1:
        raise CheckpointError(f"{path}: holds several encoders ({', '.join(prefixes)}); "
                              "keras_bert_core loads a checkpoint with exactly one")
    return prefixes[0]


def infer_config(shapes, prefix, path=""):
    """A `BertConfig` read off the weight shapes of a Model Garden encoder."""

    def shape(name):
        if prefix + name not in shapes:
            raise CheckpointError(
                f"{path}: cannot infer the BertConfig, {prefix + name} is missing; put a "
                "bert_config.json beside the checkpoint or pass config=")
        return shapes[prefix + name]

    block = re.compile(re.escape(prefix) + r"_transformer_layers/(\d+)/")
    vocab_size, width = shape(_ANCHOR)
    hidden_size, num_heads, _ = shape("_transformer_layers/0/_attention_layer/_query_dense/kernel")
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_layers=len({match.group(1) for name in shapes if (match := block.match(name))}),
        num_heads=num_heads,
        intermediate_size=shape("_transformer_layers/0/_intermediate_dense/kernel")[1],
        max_position_embeddings=shape("_position_embedding_layer/embeddings")[0],
        type_vocab_size=shape("_type_embedding_layer/embeddings")[0],
        embedding_size=None if width == hidden_size else width,
    )


def load(path, config=None):
    """Load a Model Garden BertEncoder checkpoint into a new `BertEncoder`.

    Args:
        path: the checkpoint prefix (e.g. `.../ckpt-1`), its `.index` file or its folder.
        config: a `BertConfig`; by default the `bert_config.json` beside the checkpoint, or
            one inferred from the weight shapes.

    Returns:
        `(encoder, config)`.
    """
    raw = open_tf_checkpoint(path)
    reader = RenamedReader(raw, object_paths(raw))
    encoder_prefix = _encoder_prefix(reader.shapes, reader.path)
    config = config or config_beside(reader.path) or infer_config(
        reader.shapes, encoder_prefix, reader.path)
    encoder = BertEncoder(config)
    top = {ours: encoder_prefix + theirs for ours, theirs in _TOP.items()}
    block_path = encoder_prefix + "_transformer_layers/{index}/"
    assign_checked(encoder_variables(encoder), reader,
                   lambda name: einsum_source(name, config, top, _BLOCK, block_path),
                   lambda key: key.startswith(encoder_prefix))
    return encoder, config
