"""Checks every task model passes: XLA, mixed precision, `.keras` files, compile defaults."""

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from tests.helpers import (
    check_keras_file_round_trip,
    check_trains,
    encoder_batch,
    global_dtype_policy,
    tiny_encoder,
)

# Every weight a task model trains gets a gradient (span and token models leave the unused
# pooler out of their trainable weights).
pytestmark = pytest.mark.filterwarnings("error:Gradients do not exist")

BATCH, SEQ, CHOICES = 4, 16, 2


def pretrainer_case(encoder, next_sentence=True):
    x = encoder_batch(BATCH, SEQ)
    x["masked_positions"] = np.array([[1, 2, 0], [3, 5, 7], [1, 4, 0], [2, 3, 6]], "int32")
    y = {"mlm": np.array([[7, 8, 0], [9, 10, 11], [12, 13, 0], [14, 15, 16]], "int32"),
         "nsp": np.array([0, 1, 1, 0], "int32")}
    weights = {"mlm": (y["mlm"] > 0).astype("float32"), "nsp": np.ones(BATCH, "float32")}
    return BertPretrainer(encoder, next_sentence=next_sentence), x, y, weights


def classifier_case(encoder):
    return BertClassifier(encoder, num_classes=3, dropout=0.0), encoder_batch(BATCH, SEQ), \
        np.array([0, 2, 1, 2], "int32"), None


def regression_case(encoder):
    return BertClassifier(encoder, num_classes=1, dropout=0.0), encoder_batch(BATCH, SEQ), \
        np.array([0.5, 4.0, 2.5, 1.0], "float32"), None


def span_labeler_case(encoder):
    y = {"start_positions": np.array([1, 3, 0, 5], "int32"),
         "end_positions": np.array([2, 6, 0, 5], "int32")}
    return BertSpanLabeler(encoder), encoder_batch(BATCH, SEQ), y, None


def token_classifier_case(encoder):
    x = encoder_batch(BATCH, SEQ)
    labels = np.random.default_rng(1).integers(0, 5, size=(BATCH, SEQ)).astype("int32")
    labels[:, 0] = -100
    return BertTokenClassifier(encoder, num_classes=5, dropout=0.0), x, \
        np.where(x["padding_mask"] > 0, labels, -100), None


def multiple_choice_case(encoder):
    rows = encoder_batch(BATCH * CHOICES, SEQ)
    x = {name: value.reshape(BATCH, CHOICES, SEQ) for name, value in rows.items()}
    return BertMultipleChoice(encoder, num_choices=CHOICES, dropout=0.0), x, \
        np.array([0, 1, 1, 0], "int32"), None


CASES = [pretrainer_case, classifier_case, regression_case, span_labeler_case,
         token_classifier_case, multiple_choice_case]
IDS = [case.__name__.removesuffix("_case") for case in CASES]


def make_case(case, **encoder_options):
    return case(tiny_encoder(dropout=0.0, attention_dropout=0.0, **encoder_options))


@pytest.mark.slow  # XLA compiles each train step for 10-30 s on 2 CPU cores.
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_train_step_compiles_with_xla(case):
    model, x, y, weights = make_case(case, num_layers=1)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=True)
    assert model.jit_compile is True
    check_trains(model, x, y, weights)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_trains_under_mixed_precision(case, policy):
    with global_dtype_policy(policy):
        model, x, y, weights = make_case(case, num_layers=1)
        assert model.compute_dtype == policy.removeprefix("mixed_")
        # keras wraps the optimizer for loss scaling under float16 only.
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer) == (
            policy == "mixed_float16")
        outputs = model(x)
        assert all(keras.backend.standardize_dtype(t.dtype) == "float32"
                   for t in keras.tree.flatten(outputs))
        # Eager steps: the dtypes are those of a compiled step, without minutes of tracing.
        model.compile(run_eagerly=True)
        check_trains(model, x, y, weights, steps=2, decreasing=False)


@pytest.mark.parametrize("case", [span_labeler_case, token_classifier_case],
                         ids=["span_labeler", "token_classifier"])
def test_sequence_output_models_leave_the_pooler_untrained(case):
    model, x, y, weights = make_case(case, num_layers=1)
    pooler = [keras.ops.convert_to_numpy(w) for w in model.encoder.pooler.weights]
    assert not {id(w) for w in model.encoder.pooler.weights} & {
        id(w) for w in model.trainable_weights}
    model.compile(run_eagerly=True)
    check_trains(model, x, y, weights, steps=2, decreasing=False)
    for before, after in zip(pooler, model.encoder.pooler.weights, strict=True):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_keras_file_round_trip(case, tmp_path):
    model, x, y, weights = make_case(case, num_layers=1)
    model.compile(run_eagerly=True)
    model.fit(x, y, sample_weight=weights, verbose=0)  # so there is optimizer state to save
    restored = check_keras_file_round_trip(model, x, tmp_path / "model.keras")
    assert restored.encoder.config == model.encoder.config
    # The loaded model recompiles with the same ("auto") arguments and its optimizer state.
    assert isinstance(restored.optimizer, keras.optimizers.AdamW) and restored.run_eagerly
    assert not restored.optimizer._use_weight_decay(restored.encoder.pooler.bias)
    assert len(restored.optimizer.variables) == len(model.optimizer.variables)
    for a, b in zip(restored.optimizer.variables, model.optimizer.variables, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_config_round_trip_rebuilds_the_same_model(case):
    model, x, *_ = make_case(case, num_layers=1)
    clone = type(model).from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    assert clone.count_params() == model.count_params()
    clone.set_weights(model.get_weights())
    for a, b in zip(keras.tree.flatten(model(x)), keras.tree.flatten(clone(x)), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_default_compile_is_bert_adamw_without_norm_or_bias_decay(case):
    model, *_ = make_case(case, num_layers=1)
    optimizer = model.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert optimizer.weight_decay == 0.01
    expected_rate = 1e-4 if isinstance(model, BertPretrainer) else 5e-5
    assert model.default_learning_rate == expected_rate
    np.testing.assert_allclose(optimizer.learning_rate, expected_rate)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert {"block_0/intermediate/kernel", "embeddings/word_embeddings"} <= decayed
    assert not [path for path in decayed if path.endswith(("bias", "gamma", "beta"))]


def test_compile_arguments_replace_only_their_defaults():
    model, x, y, _ = make_case(classifier_case, num_layers=1)
    model.compile(optimizer=keras.optimizers.SGD(0.01), run_eagerly=True)
    assert isinstance(model.optimizer, keras.optimizers.SGD)
    assert set(model.fit(x, y, verbose=0).history) == {"loss", "accuracy"}
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[], run_eagerly=True)
    assert isinstance(model.optimizer, keras.optimizers.AdamW)
    assert set(model.fit(x, y, verbose=0).history) == {"loss"}


@pytest.mark.parametrize("model_class, args", [
    (BertPretrainer, ()), (BertClassifier, (2,)), (BertSpanLabeler, ()),
    (BertTokenClassifier, (2,)), (BertMultipleChoice, (2,))])
def test_rejects_an_encoder_that_is_not_a_bert_encoder(model_class, args):
    with pytest.raises(TypeError, match="encoder must be a keras_bert_core BertEncoder"):
        model_class(keras.layers.Dense(4), *args)


def test_models_are_exported_from_the_models_package():
    for name in ("BertPretrainer", "BertClassifier", "BertSpanLabeler", "BertTokenClassifier",
                 "BertMultipleChoice"):
        assert hasattr(kbc.models, name)


def test_task_model_takes_the_encoder_policy_and_scales_float16_losses():
    encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100),
                              dtype="mixed_float16")
    model = kbc.BertClassifier(encoder, num_classes=2)
    assert model.dtype_policy.name == "mixed_float16"
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
