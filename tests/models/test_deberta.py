"""DeBERTa-v3 as a configuration of the BERT layers: every task model trains on it, `.keras`
round trips, its classification head (a GELU dense layer on the first token, then the
classes)."""

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from tests.helpers import check_keras_file_round_trip, check_trains
from tests.models.test_task_models import CASES, IDS, pretrainer_case

# Buckets shorter than the test inputs: the log buckets and their clipping in play.
SMALL = {"vocab_size": 100, "hidden_size": 32, "num_heads": 4, "intermediate_size": 64,
         "dropout": 0.0, "attention_dropout": 0.0, "num_layers": 1, "position_buckets": 4,
         "max_relative_positions": 16}


def deberta_encoder():
    return kbc.BertEncoder(kbc.BertConfig.preset("deberta_v3_base", **SMALL))


def _case(case):
    if case is pretrainer_case:
        return case(deberta_encoder(), next_sentence=False)  # masked LM alone
    return case(deberta_encoder())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_task_model_trains_on_deberta(case):
    model, x, y, weights = _case(case)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True)
    check_trains(model, x, y, weights, steps=3)


def test_keras_file_round_trip(tmp_path):
    for case in (pretrainer_case, CASES[1]):
        model, x, *_ = _case(case)
        restored = check_keras_file_round_trip(model, x, tmp_path / "deberta.keras")
        assert restored.encoder.config == model.encoder.config
        assert restored.encoder.relative_embeddings is not None


def test_the_classification_head_is_its_context_pooler():
    model = kbc.BertClassifier(deberta_encoder(), num_classes=3)
    assert model.head.hidden_activation == "gelu" and model.head.hidden is not None


def test_lora_adapts_its_shared_query_and_key_projections_and_merges_back():
    """LoRA on the query and key projections, which also project DeBERTa's relative
    embeddings: merged into the kernels, the model computes what it did with adapters."""
    model, x, y, _ = _case(CASES[1])  # the classifier
    kbc.enable_lora(model, rank=2, targets=("query", "key"))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, epochs=2, verbose=0)
    adapted = model(x)
    kbc.merge_lora(model)
    np.testing.assert_allclose(model(x), adapted, atol=1e-5)


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


def test_a_deberta_teacher_distills_into_a_bert_student_with_every_loss():
    """Hidden states and the last layer's (disentangled) attention probabilities too."""
    teacher, x, y, _ = _case(CASES[1])
    student = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=100, hidden_size=16, num_layers=1, num_heads=2,
        intermediate_size=32, dropout=0.0, attention_dropout=0.0)),
        num_classes=teacher.num_classes)
    distiller = kbc.Distiller(teacher, student, hidden_weight=1.0, hidden_loss="cosine",
                              attention_weight=1.0)
    distiller.compile(optimizer=keras.optimizers.SGD(0.1))
    history = distiller.fit(x, y, batch_size=len(y), epochs=3, verbose=0).history
    for name in ("loss", "soft_loss", "hidden_loss", "attention_loss"):
        assert np.all(np.isfinite(history[name])), name
    assert history["attention_loss"][0] > 0 and history["loss"][-1] < history["loss"][0]
