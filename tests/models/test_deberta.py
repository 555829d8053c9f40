"""DeBERTa-v3's own: its classification head (a GELU dense layer on the first token, then
the classes) and relative positions within packed documents. Every task model, `.keras`
round trips, LoRA and distillation: tests/models/test_families.py."""

import numpy as np

import keras_bert_core as kbc
from tests.models.test_families import family_encoder


def deberta_encoder():
    return family_encoder("deberta")


def test_the_classification_head_is_its_context_pooler():
    model = kbc.BertClassifier(deberta_encoder(), num_classes=3)
    assert model.head.hidden_activation == "gelu" and model.head.hidden is not None


def test_a_packed_row_computes_what_separate_rows_would():
    """Relative positions within each packed document are those of its own row."""
    encoder = deberta_encoder()
    first, second = np.arange(10, 17, dtype="int32"), np.arange(30, 42, dtype="int32")
    packed = np.concatenate([first, second])[None]
    outputs = np.asarray(encoder({"token_ids": packed, "segment_ids": np.zeros_like(packed),
                                  "padding_mask": np.repeat([[1, 2]], [7, 12], axis=1)
                                  .astype("int32")})["sequence_output"])[0]
    for ids, rows in ((first, slice(0, 7)), (second, slice(7, None))):
        alone = encoder({"token_ids": ids[None], "segment_ids": np.zeros_like(ids[None]),
                         "padding_mask": np.ones_like(ids[None])})["sequence_output"]
        np.testing.assert_allclose(outputs[rows], np.asarray(alone)[0], atol=1e-5)
