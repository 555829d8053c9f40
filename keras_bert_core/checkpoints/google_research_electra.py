"""google-research/electra TF1 checkpoints: the discriminator under `electra/`, the
generator under `generator/` (sharing `electra/embeddings/`), and their heads
`discriminator_predictions/` and `generator_predictions/`.

Variables are read by name with `tf.train.load_checkpoint`; kernels are `[in, out]` already.
ELECTRA's releases ship no configuration file: without a `config.json` (or
`bert_config.json`) beside the checkpoint the sizes are read from the weights' shapes, with
64-wide attention heads as every published ELECTRA has.
"""

from __future__ import annotations

import re

from keras_bert_core.checkpoints.google_research import config_beside
from keras_bert_core.checkpoints.readers import open_tf_checkpoint
from keras_bert_core.checkpoints.weights import (
    Source,
    assign_checked,
    encoder_variables,
    read_head_groups,
)
from keras_bert_core.config import BertConfig
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models import BertEncoder

SCOPES = {"discriminator": "electra/", "generator": "generator/"}
_SHARED_EMBEDDINGS = "electra/embeddings/"
_OPTIMIZER_SLOTS = ("/adam_m", "/adam_v")
_HEADS = {
    "discriminator": {
        "rtd/dense/kernel": Source("discriminator_predictions/dense/kernel"),
        "rtd/dense/bias": Source("discriminator_predictions/dense/bias"),
        "rtd/output/kernel": Source("discriminator_predictions/dense_1/kernel"),
        "rtd/output/bias": Source("discriminator_predictions/dense_1/bias"),
    },
    "generator": {
        "mlm/transform/kernel": Source("generator_predictions/dense/kernel"),
        "mlm/transform/bias": Source("generator_predictions/dense/bias"),
        "mlm/layer_norm/gamma": Source("generator_predictions/LayerNorm/gamma"),
        "mlm/layer_norm/beta": Source("generator_predictions/LayerNorm/beta"),
        "mlm/output_bias": Source("generator_predictions/output_bias"),
    },
}


def matches(reader):
    """Whether a TensorFlow checkpoint names its variables as google-research/electra does."""
    return any(key.startswith(_SHARED_EMBEDDINGS) for key in reader.shapes)


def _check_part(part):
    if part not in SCOPES:
        raise ValueError(f"part {part!r} is not one of {sorted(SCOPES)}")
    return SCOPES[part]


def _source_of(reader, scope):
    """Canonical name -> its variable under `scope`; the generator reads the shared
    embedding tables unless it has its own."""
    own_embeddings = any(key.startswith(scope + "embeddings/") for key in reader.shapes)

    def source(name):
        if name.startswith("embeddings/projection/"):
            return Source(scope + "embeddings_project/" + name.rsplit("/", 1)[1])
        if name.startswith("embeddings/") and not own_embeddings:
            return Source(_SHARED_EMBEDDINGS + name[len("embeddings/"):])
        return Source(scope + name)

    return source


def inferred_config(reader, part="discriminator"):
    """The `BertConfig` of `part` as the shapes of its weights give it."""
    scope = _check_part(part)
    shapes = reader.shapes
    table = shapes.get(_SHARED_EMBEDDINGS + "word_embeddings")
    query = shapes.get(f"{scope}encoder/layer_0/attention/self/query/kernel")
    if table is None or query is None:
        raise CheckpointError(f"{reader.path}: no {scope} ELECTRA encoder in this checkpoint")
    layers = {int(m[1]) for key in shapes if (m := re.match(rf"{scope}encoder/layer_(\d+)/", key))}
    hidden = query[1]
    return BertConfig(
        family="electra", pooler=False, classifier_activation="gelu", vocab_size=table[0],
        hidden_size=hidden, num_layers=max(layers) + 1, num_heads=max(1, hidden // 64),
        intermediate_size=shapes[f"{scope}encoder/layer_0/intermediate/dense/kernel"][1],
        max_position_embeddings=shapes[_SHARED_EMBEDDINGS + "position_embeddings"][0],
        type_vocab_size=shapes[_SHARED_EMBEDDINGS + "token_type_embeddings"][0],
        embedding_size=None if table[1] == hidden else table[1])


def load(path, config=None, part="discriminator"):
    """Load the discriminator (or, with `part="generator"`, the generator) of a
    google-research ELECTRA checkpoint into a new `BertEncoder`.

    Args:
        path: the checkpoint prefix (e.g. `.../electra_small`), its `.index` file or folder.
        config: a `BertConfig` to use instead of the one beside it or read from the shapes.
        part: `"discriminator"` or `"generator"`.

    Returns:
        `(encoder, config)`.
    """
    scope = _check_part(part)
    reader = open_tf_checkpoint(path)
    if config is None:
        beside = config_beside(reader.path)
        config = beside if beside is not None and part == "discriminator" else \
            inferred_config(reader, part)
    encoder = BertEncoder(config)
    own_embeddings = any(key.startswith(scope + "embeddings/") for key in reader.shapes)
    scopes = (scope,) if own_embeddings or part == "discriminator" else \
        (scope, _SHARED_EMBEDDINGS)
    assign_checked(
        encoder_variables(encoder), reader, _source_of(reader, scope),
        lambda key: key.startswith(scopes) and not key.endswith(_OPTIMIZER_SLOTS))
    return encoder, config


def read_heads(path, part="discriminator"):
    """The replaced-token head of the discriminator (or the generator's masked-LM head)."""
    _check_part(part)
    return read_head_groups(open_tf_checkpoint(path), _HEADS[part])
