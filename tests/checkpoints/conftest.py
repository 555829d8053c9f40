"""Shared fixtures: a tiny config, random encoders, a padded batch and a forward pass."""

import numpy as np
import pytest

from keras_bert_core import BertConfig, BertEncoder
from keras_bert_core.checkpoints import encoder_variables

TINY = {"vocab_size": 100, "hidden_size": 64, "num_layers": 2, "num_heads": 4,
        "intermediate_size": 128, "max_position_embeddings": 64, "type_vocab_size": 2}


@pytest.fixture
def tiny_config():
    return BertConfig(**TINY)


@pytest.fixture
def random_encoder():
    """Build a `BertEncoder` whose every weight is random (biases and norms included)."""

    def make(config):
        encoder = BertEncoder(config)
        rng = np.random.default_rng(0)
        for name, variable in encoder_variables(encoder).items():
            values = rng.normal(scale=0.2, size=variable.shape)
            variable.assign((values + (name.endswith("/gamma"))).astype("float32"))
        return encoder

    return make


@pytest.fixture
def batch():
    """Three rows of 12 int32 ids: padding, two segments, every id of the tiny vocabulary."""
    rng = np.random.default_rng(1)
    token_ids = rng.integers(1, TINY["vocab_size"], size=(3, 12)).astype("int32")
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, 7:] = 0
    padding_mask[2, 4:] = 0
    segment_ids = np.zeros_like(token_ids)
    segment_ids[0, 6:] = 1
    segment_ids[1, 3:7] = 1
    return {"token_ids": token_ids * padding_mask, "segment_ids": segment_ids,
            "padding_mask": padding_mask}


@pytest.fixture
def run():
    """Run an encoder on a batch; numpy `sequence_output` and `pooled_output`."""

    def forward(encoder, inputs):
        outputs = encoder(inputs)
        return {name: np.asarray(outputs[name]) for name in ("sequence_output", "pooled_output")}

    return forward
