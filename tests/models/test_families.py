"""RoBERTa, ALBERT, DistilBERT, ModernBERT and DeBERTa-v3 as configurations of the BERT
layers: sizes, every task model on every family, `.keras` round trips, ALBERT's shared layers,
LoRA and distillation on the families with attention of their own."""

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from tests.helpers import (
    check_keras_file_round_trip,
    check_trains,
    encoder_batch,
    zero_initialized_weights,
)
from tests.models.test_task_models import CASES, IDS, pretrainer_case

# transformers' `num_parameters()` of RobertaModel, AlbertModel, DistilBertModel and
# BertModel for the published configurations (roberta-base, albert-base-v2, ...), pooler
# included where the model has one; tests/checkpoints/make_family_fixtures.py recomputes them
# into tests/checkpoints/data/families/param_counts.json.
PUBLISHED_PARAMETERS = {
    "base": 109_482_240,
    "roberta_base": 124_645_632,
    "roberta_large": 355_359_744,
    "albert_base": 11_683_584,
    "albert_large": 17_683_968,
    "albert_xlarge": 58_724_864,
    "albert_xxlarge": 222_595_584,
    "distilbert_base": 66_362_880,
    "electra_small": 13_483_008,
    "electra_base": 108_891_648,
    "electra_large": 334_092_288,
}
FAMILIES = ["roberta", "albert", "distilbert", "modernbert", "deberta"]
SMALL = {"vocab_size": 100, "hidden_size": 32, "num_heads": 4, "intermediate_size": 64,
         "dropout": 0.0, "attention_dropout": 0.0}


def family_encoder(family, **overrides):
    """A small random encoder of `family` (ALBERT: 3 layers sharing one block; ModernBERT:
    a global layer, then a local one whose window is shorter than the inputs; DeBERTa-v3:
    relative-position buckets shorter than the inputs, so the log buckets and their clipping
    are in play)."""
    sizes = {"albert": {"num_layers": 3, "embedding_size": 16},
             "modernbert": {"num_layers": 2, "local_attention_window": 4,
                            "global_attention_every": 2},
             "deberta": {"num_layers": 1, "position_buckets": 4,
                         "max_relative_positions": 16}}.get(family, {"num_layers": 1})
    preset = "deberta_v3_base" if family == "deberta" else f"{family}_base"
    config = kbc.BertConfig.preset(preset, **{**SMALL, **sizes, **overrides})
    return kbc.BertEncoder(config)


@pytest.mark.parametrize("preset", sorted(PUBLISHED_PARAMETERS))
def test_presets_have_the_published_parameter_counts(preset):
    with zero_initialized_weights():
        encoder = kbc.BertEncoder(kbc.BertConfig.preset(preset))
    assert encoder.count_params() == PUBLISHED_PARAMETERS[preset]
    keras.backend.clear_session()


def test_albert_layers_share_their_weights():
    encoder = family_encoder("albert", num_layers=4, num_layer_groups=2)
    blocks = encoder.blocks
    assert blocks[0] is blocks[1] and blocks[2] is blocks[3] and blocks[1] is not blocks[2]
    unshared = family_encoder("albert", num_layers=4, num_layer_groups=None)
    block_weights = len(blocks[0].weights)
    assert len(unshared.weights) - len(encoder.weights) == 2 * block_weights


def test_distilbert_ignores_segment_ids_and_has_no_pooled_output():
    encoder = family_encoder("distilbert")
    x = encoder_batch(2, 8)
    out = encoder(x)
    assert set(out) == {"sequence_output"}
    other = encoder({**x, "segment_ids": 1 - x["segment_ids"]})
    np.testing.assert_array_equal(out["sequence_output"], other["sequence_output"])


def test_roberta_positions_start_after_the_offset():
    encoder = family_encoder("roberta", max_position_embeddings=10)
    table = encoder.embeddings.position_embeddings
    table.assign(np.zeros(table.shape, "float32"))
    x = encoder_batch(1, 8)
    before = encoder(x)["sequence_output"]
    rows = np.zeros(table.shape, "float32")
    rows[:2] = 5.0  # the two rows below the offset: never used
    table.assign(rows)
    np.testing.assert_array_equal(before, encoder(x)["sequence_output"])
    with pytest.raises(ValueError, match="position offset 2"):
        encoder.config.check_fits(100, 9)


def test_the_family_classification_head():
    for family, activation in [("roberta", "tanh"), ("distilbert", "relu"), ("albert", None)]:
        model = kbc.BertClassifier(family_encoder(family), num_classes=3)
        assert model.head.hidden_activation == activation
        assert (model.head.hidden is None) == (activation is None)


def test_sentence_heads_need_a_pooler():
    with pytest.raises(ValueError, match="next_sentence=False"):
        kbc.BertPretrainer(family_encoder("distilbert"))
    with pytest.raises(ValueError, match="set classifier_activation"):
        kbc.BertConfig.preset("distilbert_base", classifier_activation=None)


def _family_case(case, family):
    encoder = family_encoder(family)
    if case is pretrainer_case:
        # All but ALBERT pretrain with masked LM alone.
        return case(encoder, next_sentence=family == "albert")
    return case(encoder)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_task_model_trains_on_every_family(case, family):
    model, x, y, weights = _family_case(case, family)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True)
    check_trains(model, x, y, weights, steps=2)


@pytest.mark.parametrize("family", FAMILIES)
def test_keras_file_round_trip(family, tmp_path):
    for case in (pretrainer_case, CASES[1]):
        model, x, *_ = _family_case(case, family)
        restored = check_keras_file_round_trip(model, x, tmp_path / f"{family}.keras")
        assert restored.encoder.config == model.encoder.config
        if family == "albert":
            assert restored.encoder.blocks[0] is restored.encoder.blocks[2]


@pytest.mark.parametrize("family", ["modernbert", "deberta"])
def test_lora_adapts_the_query_and_key_projections_and_merges_back(family):
    """LoRA on the query and key projections (DeBERTa's also project its relative
    embeddings; ModernBERT's rotate by position): merged into the kernels, the model computes
    what it did with adapters."""
    model, x, y, _ = _family_case(CASES[1], family)  # the classifier
    kbc.enable_lora(model, rank=2, targets=("query", "key"))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, epochs=2, verbose=0)
    adapted = model(x)
    kbc.merge_lora(model)
    np.testing.assert_allclose(model(x), adapted, atol=1e-5)


@pytest.mark.parametrize("family", ["modernbert", "deberta"])
def test_a_teacher_distills_into_a_bert_student_with_every_loss(family):
    """Hidden states and the last layer's attention probabilities too (ModernBERT's last
    layer attends within its window; DeBERTa's disentangled)."""
    teacher, x, y, _ = _family_case(CASES[1], family)
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
