"""LoRA: adapters on the encoder's projections (keras_bert_core.models.lora)."""

import os

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.errors import CheckpointMismatchError
from tests.helpers import encoder_batch, global_dtype_policy, tiny_encoder

HIDDEN, INTERMEDIATE, LAYERS = 128, 512, 2  # the "tiny" preset


def classifier(num_classes=2, **overrides):
    return kbc.BertClassifier(tiny_encoder(**overrides), num_classes=num_classes)


def outputs(model, x):
    return keras.ops.convert_to_numpy(model(x, training=False))


def values(model):
    return {w.path: keras.ops.convert_to_numpy(w).copy() for w in model.weights}


def perturb_adapters(model, seed=0):
    """Nonzero B matrices (a fresh adapter's are zero), as after some training."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        if w.path.endswith("lora_kernel_b"):
            w.assign(rng.normal(0, 0.05, w.shape).astype("float32"))


def copy_base_weights(source, target):
    """`target` gets `source`'s weights, adapters aside: what loading the base checkpoint
    into a fresh model gives."""
    sources = {w.path: w for w in source.weights}
    for w in target.weights:
        w.assign(sources[w.path])


def test_trainable_parameters_follow_the_closed_form():
    rank, classes = 4, 3
    model = classifier(num_classes=classes)
    total_before = model.count_params()
    summary = kbc.enable_lora(model, rank=rank)  # query and value
    adapters = LAYERS * 2 * (2 * rank * HIDDEN)
    head = HIDDEN * classes + classes
    assert summary.adapter_params == adapters
    assert summary.trainable_params == adapters + head
    assert summary.total_params == total_before + adapters == model.count_params()
    assert summary.layers == ("block_0/attention/query", "block_0/attention/value",
                              "block_1/attention/query", "block_1/attention/value")
    assert "trainable: 4,483 of" in str(summary)

    everything = classifier(num_classes=classes)
    summary = kbc.enable_lora(everything, rank=rank, targets="all",
                              also_train=("pooler", "layer_norm", "bias"))
    per_block = 4 * 2 * rank * HIDDEN + 2 * rank * (HIDDEN + INTERMEDIATE)
    biases = 4 * HIDDEN + INTERMEDIATE + HIDDEN  # q k v attention-output, feed-forward
    norms = 2 * 2 * HIDDEN  # attention_norm and output_norm
    embedding_norm, pooler = 2 * HIDDEN, HIDDEN * HIDDEN + HIDDEN
    assert summary.adapter_params == LAYERS * per_block
    assert summary.trainable_params == (LAYERS * (per_block + biases + norms)
                                        + embedding_norm + pooler + head)


def test_shared_albert_blocks_get_one_adapter_each():
    model = classifier(num_layers=4, num_layer_groups=1, embedding_size=32)
    encoder = model.encoder
    assert len({id(block) for block in encoder.blocks}) == 1
    summary = kbc.enable_lora(model, rank=2, targets=("query", "intermediate"))
    assert summary.layers == ("block_0/attention/query", "block_0/intermediate")
    assert summary.adapter_params == 2 * 2 * HIDDEN + 2 * (HIDDEN + INTERMEDIATE)
    # Every layer runs through the one adapted block.
    assert all(block.attention.query.lora_enabled for block in encoder.blocks)


def test_new_adapters_change_no_output_and_freeze_the_encoder():
    model = classifier()
    x = encoder_batch()
    before = outputs(model, x)
    kbc.enable_lora(model, rank=4, targets="attention")
    np.testing.assert_allclose(outputs(model, x), before, atol=1e-6)
    trainable = {w.path for w in model.trainable_weights}
    assert {path for path in trainable if "lora" not in path} == {
        "classifier/dense/kernel", "classifier/dense/bias"}
    assert len(trainable) == 2 + LAYERS * 4 * 2
    with pytest.raises(ValueError, match="already enabled on block_0/attention/query"):
        kbc.enable_lora(model, rank=4)
    with pytest.raises(ValueError, match="unknown LoRA target 'keys'"):
        kbc.enable_lora(classifier(), rank=4, targets=("keys",))
    with pytest.raises(ValueError, match="rank must be a positive int"):
        kbc.enable_lora(classifier(), rank=0)
    with pytest.raises(TypeError, match="task model or BertEncoder"):
        kbc.enable_lora(keras.Sequential([keras.layers.Dense(2)]), rank=2)


def test_every_task_model_takes_adapters():
    encoder = tiny_encoder()
    summary = kbc.enable_lora(encoder, rank=2)
    assert summary.trainable_params == summary.adapter_params  # no head
    pretrainer = kbc.BertPretrainer(tiny_encoder())
    kbc.enable_lora(pretrainer, rank=2)
    trainable = {w.path for w in pretrainer.trainable_weights if "lora" not in w.path}
    # The masked-LM head trains, its decoder (the tied word table) stays frozen; so does
    # the pooler that the next-sentence head reads.
    assert "embeddings/word_embeddings" not in trainable
    assert {path.split("/")[0] for path in trainable} == {"masked_lm", "next_sentence"}
    span = kbc.BertSpanLabeler(tiny_encoder())
    kbc.enable_lora(span, rank=2, also_train="pooler")  # a span model never trains it
    assert not any(w.path.startswith("pooler/") for w in span.trainable_weights)


def test_a_lora_fine_tune_learns_and_changes_only_what_trains():
    rng = np.random.default_rng(0)
    keyword, seq = 5, 16

    def split(count):
        ids = rng.integers(6, 100, size=(count, seq)).astype("int32")
        ids[:, 0], ids[:, -1] = 2, 3
        labels = rng.integers(0, 2, size=count)
        where = rng.integers(1, seq - 1, size=count)
        ids[labels == 1, where[labels == 1]] = keyword
        return ({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                 "padding_mask": np.ones_like(ids)}, labels.astype("int32"))

    (x, y), (x_test, y_test) = split(512), split(256)

    def fine_tuned(adapt):
        model = kbc.BertClassifier(
            tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0), num_classes=2,
            dropout=0.0)
        if adapt:
            kbc.enable_lora(model, rank=8, targets=("query", "value"))
        else:
            model.encoder.trainable = False  # the head alone
        model.compile(optimizer=kbc.BertAdamW(3e-3))
        before = values(model)
        model.fit(x, y, batch_size=32, epochs=12, verbose=0)
        accuracy = np.mean(outputs(model, x_test).argmax(-1) == y_test)
        return model, accuracy, before, values(model)

    model, accuracy, before, after = fine_tuned(adapt=True)
    assert accuracy >= 0.85, accuracy
    changed = {path for path in before if not np.array_equal(before[path], after[path])}
    assert changed == {w.path for w in model.trainable_weights}
    # The adapters do the learning: the random encoder's features alone do not tell.
    assert fine_tuned(adapt=False)[1] < 0.7


def test_adapters_alone_save_and_load_into_a_fresh_model(tmp_path):
    model = classifier()
    kbc.enable_lora(model, rank=4, targets=("query", "value", "intermediate"),
                    also_train="layer_norm")
    perturb_adapters(model)
    path = str(tmp_path / "adapters.lora.h5")
    kbc.save_lora_weights(model, path)
    x = encoder_batch()

    fresh = classifier()
    copy_base_weights(model, fresh)
    summary = kbc.load_lora_weights(fresh, path)
    assert (summary.rank, summary.targets, summary.also_train) == (
        4, ("query", "value", "intermediate"), ("layer_norm",))
    np.testing.assert_allclose(outputs(fresh, x), outputs(model, x), atol=1e-6)
    assert {w.path for w in fresh.trainable_weights} == {
        w.path for w in model.trainable_weights}
    # The file holds what trains: a small fraction of the model.
    full_bytes = 4 * model.count_params()
    assert os.path.getsize(path) < 0.15 * full_bytes


def test_a_file_that_does_not_fit_names_every_mismatch(tmp_path):
    model = classifier()
    kbc.enable_lora(model, rank=4)
    path = str(tmp_path / "adapters.lora.h5")
    kbc.save_lora_weights(model, path)

    other_rank = classifier()
    kbc.enable_lora(other_rank, rank=2)
    with pytest.raises(CheckpointMismatchError) as error:
        kbc.load_lora_weights(other_rank, path)
    assert len(error.value.mis_shaped) == LAYERS * 2 * 2
    assert ("block_0/attention/query/lora_kernel_a: file (128, 4), model (128, 2)"
            in error.value.mis_shaped)

    adapted_more = classifier()
    kbc.enable_lora(adapted_more, rank=4, targets=("query", "key", "value"))
    with pytest.raises(CheckpointMismatchError, match="block_1/attention/key/lora_kernel_b"):
        kbc.load_lora_weights(adapted_more, path)

    plain = kbc.BertClassifier(tiny_encoder(num_layers=1), num_classes=2)
    with pytest.raises(CheckpointMismatchError) as error:
        kbc.load_lora_weights(plain, path)
    assert "block_1/attention/value/lora_kernel_a" in error.value.unexpected
    # The check comes before anything changes: no adapters were enabled.
    assert not any("lora" in w.path for w in plain.weights)

    (tmp_path / "not_lora.h5").write_bytes(b"")
    with pytest.raises(kbc.CheckpointError, match="not_lora.h5"):
        kbc.load_lora_weights(classifier(), str(tmp_path / "not_lora.h5"))


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
def test_merged_model_equals_the_adapted_one_and_both_round_trip_keras_files(tmp_path):
    model = classifier()
    kbc.enable_lora(model, rank=4, targets="all", alpha=8)
    perturb_adapters(model)
    x = encoder_batch()
    expected = outputs(model, x)

    merged = kbc.merge_lora(model)
    assert type(merged) is kbc.BertClassifier
    assert not any("lora" in w.path for w in merged.weights)
    assert len(merged.trainable_weights) == len(merged.weights)
    np.testing.assert_allclose(outputs(merged, x), expected, atol=1e-5)
    assert np.abs(outputs(classifier(), x) - expected).max() > 1e-3  # the adapters count

    for name, saved in (("lora", model), ("merged", merged)):
        saved.save(tmp_path / f"{name}.keras")
        loaded = keras.saving.load_model(tmp_path / f"{name}.keras")
        np.testing.assert_allclose(outputs(loaded, x), expected, atol=1e-5)
        # Keras writes a LoRA layer's merged kernel and no adapters.
        assert not any("lora" in w.path for w in loaded.weights)

    with pytest.raises(ValueError, match="no LoRA adapters"):
        kbc.merge_lora(merged)


def test_one_step_under_mixed_bfloat16(tmp_path):
    with global_dtype_policy("mixed_bfloat16"):
        model = classifier(num_layers=1)
        kbc.enable_lora(model, rank=4)
        lora = [w for w in model.trainable_weights if "lora" in w.path]
        assert {w.dtype for w in lora} == {"float32"}
        before = [keras.ops.convert_to_numpy(w).copy() for w in lora]
        x = encoder_batch()
        history = model.fit(x, np.array([0, 1, 0, 1]), verbose=0)
        assert np.isfinite(history.history["loss"][0])
        # B moves from zero at the first step (A's gradient goes through B, zero until then).
        assert all(not np.array_equal(b, keras.ops.convert_to_numpy(w))
                   for b, w in zip(before, lora, strict=True) if w.path.endswith("_b"))
        merged = kbc.merge_lora(model)
        np.testing.assert_allclose(outputs(merged, x), outputs(model, x), atol=2e-2)


def test_enabling_after_training_compiles_again():
    model = classifier(num_layers=1)
    x, y = encoder_batch(), np.array([0, 1, 0, 1])
    model.fit(x, y, verbose=0)  # the optimizer now holds state for every weight
    kbc.enable_lora(model, rank=2)
    # Rebuilt for what trains now: AdamW's iteration and learning rate, and two moments for
    # each of the 4 adapter matrices and the head's kernel and bias.
    assert len(model.optimizer.variables) == 2 + 2 * 6
    before = values(model)
    model.fit(x, y, verbose=0)
    after = values(model)
    assert {path for path in before if not np.array_equal(before[path], after[path])} == {
        w.path for w in model.trainable_weights}


@pytest.mark.slow
def test_exports_of_the_adapted_and_the_merged_model_agree(tmp_path, char_vocab_file):
    import tensorflow as tf

    preprocessor = kbc.BertPreprocessor(str(char_vocab_file), seq_length=32)
    model = kbc.BertClassifier(tiny_encoder(vocab_size=len(preprocessor.vocabulary)),
                               num_classes=3)
    kbc.enable_lora(model, rank=4)
    perturb_adapters(model)
    texts = ["a b c", "hello, world 42"]
    features = {k: keras.ops.convert_to_numpy(v) for k, v in preprocessor(texts).items()}
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(features), axis=-1))
    served = {}
    for name, exported in (("lora", model), ("merged", kbc.merge_lora(model))):
        path = kbc.export_saved_model(exported, preprocessor, str(tmp_path), name=name,
                                      warmup=False)
        signatures = tf.saved_model.load(str(path)).signatures
        from_ids = signatures["predict_ids"](**{k: tf.constant(v) for k, v in features.items()})
        np.testing.assert_allclose(from_ids["probabilities"].numpy(), expected, atol=1e-5)
        served[name] = signatures["serving_default"](text=tf.constant(texts))["probabilities"]
    np.testing.assert_allclose(served["lora"].numpy(), served["merged"].numpy(), atol=1e-5)


def test_a_rank_above_a_kernels_smaller_side_is_refused():
    model = classifier(num_layers=1)
    with pytest.raises(ValueError, match=r"rank 129 is larger than block_0/attention/query's "
                                         r"kernel \(128 x 128\): choose a rank of at most 128"):
        kbc.enable_lora(model, rank=HIDDEN + 1)
    assert not kbc.models.lora.has_lora(model)
    kbc.enable_lora(model, rank=HIDDEN)  # full rank: allowed


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
def test_backups_keep_the_adapters_that_keras_weight_files_merge(tmp_path):
    from keras_bert_core.training import StepBackup

    model = classifier(num_layers=1)
    kbc.enable_lora(model, rank=4)
    perturb_adapters(model)
    x, y = encoder_batch(), np.array([0, 1, 0, 1])
    backup = StepBackup(str(tmp_path), every_steps=1)
    model.compile(optimizer=kbc.BertAdamW(1e-3))
    model.fit(x, y, epochs=2, verbose=0, callbacks=[backup])
    saved = values(model)

    # Keras's own file: the merged kernel in W, A and B zeroed on load.
    restored = classifier(num_layers=1)
    kbc.enable_lora(restored, rank=4)
    restored.compile(optimizer=kbc.BertAdamW(1e-3))
    restored.load_weights(backup.backups()[-1])
    b = "block_0/attention/query/lora_kernel_b"
    assert not values(restored)[b].any()

    assert backup.restore(restored) == 2
    after = values(restored)
    assert set(after) == set(saved)
    for path, value in saved.items():
        np.testing.assert_array_equal(after[path], value, err_msg=path)
    np.testing.assert_allclose(outputs(restored, x), outputs(model, x), atol=1e-6)

    plain = classifier(num_layers=1)  # a model without adapters reads the file as Keras does
    plain.load_weights(backup.backups()[-1])
    kbc.models.lora.restore_lora_state(plain, backup.backups()[-1])
    np.testing.assert_allclose(outputs(plain, x), outputs(model, x), atol=1e-5)
