"""`ElectraPretrainer`: the generator shares the discriminator's tables, its samples replace
the masked tokens, and the whole trains with `fit`, saves and loads."""

import os

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint
from keras_bert_core.layers import ReplacedTokenSampler
from tests.models import electra_mirrored


def test_the_sampler_writes_only_real_predictions_and_marks_what_changed():
    sampler = ReplacedTokenSampler(seed=0)
    logits = np.full((1, 3, 10), -1e4, "float32")
    logits[0, 0, 6] = logits[0, 1, 9] = logits[0, 2, 8] = 0.0
    ids = np.array([[2, 4, 4, 4, 3]], "int32")
    corrupted, replaced = sampler(logits, ids, np.array([[1, 2, 0]], "int32"),
                                  np.array([[6, 7, 0]], "int32"),
                                  np.array([[1.0, 1.0, 0.0]], "float32"))
    # Slot 0 samples the original (not replaced); the unused slot 2 writes nothing.
    assert np.asarray(corrupted).tolist() == [[2, 6, 9, 4, 3]]
    assert np.asarray(replaced).tolist() == [[0, 0, 1, 0, 0]]


def test_pretrainer_trains_shared_tables_and_round_trips(tmp_path):
    config = kbc.BertConfig.preset("electra_small", vocab_size=50, num_layers=1,
                                   hidden_size=16, num_heads=2, intermediate_size=32,
                                   embedding_size=8, max_position_embeddings=16)
    model = kbc.ElectraPretrainer(kbc.BertEncoder(config), generator_size=0.5, rtd_weight=10.0,
                                  seed=0)
    generator = model.generator
    assert (generator.config.hidden_size, generator.config.num_heads) == (8, 1)
    assert generator.embeddings.projection is None  # tables as wide as the generator
    assert generator.embeddings.word_embeddings is model.encoder.embeddings.word_embeddings
    weights = model.trainable_weights
    assert len(weights) == len({id(w) for w in weights})  # the shared tables once

    ids = np.array([[2, 10, 4, 12, 4, 3, 0, 0]] * 4, "int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids > 0).astype("int32"),
         "masked_positions": np.array([[2, 4, 0]] * 4, "int32")}
    y = {"mlm": np.array([[11, 13, 0]] * 4, "int32")}
    w = {"mlm": np.array([[1.0, 1.0, 0.0]] * 4, "float32")}
    model.compile(jit_compile=False)  # (the mirrored test compiles with XLA)
    table = model.encoder.embeddings.word_embeddings.numpy()
    history = model.fit(x, y, sample_weight=w, epochs=2, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    # loss = mlm + weight * rtd, as Keras logs each output's.
    np.testing.assert_allclose(
        history.history["loss"][-1],
        history.history["mlm_loss"][-1] + 10.0 * history.history["rtd_loss"][-1], rtol=1e-3)
    assert not np.allclose(model.encoder.embeddings.word_embeddings.numpy(), table)

    path = os.path.join(tmp_path, "electra.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.generator.embeddings.word_embeddings is \
        restored.encoder.embeddings.word_embeddings
    for ours, theirs in zip(model.weights, restored.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    inputs = {**x, "masked_ids": y["mlm"], "masked_weights": w["mlm"]}
    np.testing.assert_allclose(restored(inputs)["mlm"], model(inputs)["mlm"], atol=1e-5)
    encoder, loaded = load_checkpoint(path)  # the discriminator
    assert loaded == config and encoder.count_params() == model.encoder.count_params()


@pytest.mark.slow  # two fits under the strategy, one compiled by XLA
def test_fit_under_a_two_replica_strategy(two_cpu_strategy):
    result = electra_mirrored.results(two_cpu_strategy)
    assert result["replicas"] == 2
    for run in ("keras_step", "xla_per_replica"):
        assert all(np.isfinite(result[run]["loss"])), result
    assert result["xla_per_replica"]["per_replica_xla"] is True


def test_detection_loss_averages_over_every_real_token_and_no_padding():
    # ELECTRA's (and Model Garden's) objective: masked-LM loss over the real predictions
    # plus the weight times the discriminator's sigmoid cross-entropy averaged over every
    # non-padding token (replaced or not), from one forward pass.
    config = kbc.BertConfig.preset("electra_small", vocab_size=30, num_layers=1,
                                   hidden_size=8, num_heads=2, intermediate_size=16,
                                   embedding_size=None, max_position_embeddings=8)
    model = kbc.ElectraPretrainer(kbc.BertEncoder(config), generator_size=0.5, rtd_weight=7.0,
                                  seed=0)
    ids = np.array([[2, 10, 4, 12, 4, 3, 0, 0], [2, 4, 9, 3, 0, 0, 0, 0]], "int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids > 0).astype("int32"),
         "masked_positions": np.array([[2, 4], [1, 0]], "int32"),
         "masked_ids": np.array([[11, 13], [5, 0]], "int32"),
         "masked_weights": np.array([[1.0, 1.0], [1.0, 0.0]], "float32")}
    # Logits far from 0 and different at every position, so that counting the padding
    # would change the mean.
    dense = model.discriminator_head.dense
    dense.kernel.assign(dense.kernel * 300.0)
    out = model(x, training=False)
    loss = model.compute_loss(x, {"mlm": x["masked_ids"]}, out,
                              {"mlm": x["masked_weights"]}, training=False)
    probabilities = keras.ops.softmax(out["mlm"]).numpy()
    picked = np.take_along_axis(probabilities, x["masked_ids"][..., None], -1)[..., 0]
    mlm = -(np.log(picked) * x["masked_weights"]).sum() / x["masked_weights"].sum()
    logits, replaced = out["rtd"].numpy()[..., 0], out["replaced"].numpy()[..., 0]
    real = x["padding_mask"] > 0
    assert not replaced[~real].any()  # padding is never written
    detection = np.logaddexp(0.0, logits) - replaced * logits
    np.testing.assert_allclose(float(loss), mlm + 7.0 * detection[real].mean(), rtol=1e-4)
    assert not np.isclose(detection[real].mean(), detection.mean(), rtol=1e-3)
