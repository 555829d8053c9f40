"""`distribution_strategy`: names, clear errors, one device vs mirrored, multi-worker `fit`,
and the XLA step on the helper's one-device path."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework.config import is_op_determinism_enabled

from keras_bert_core.models.embedding_losses import ContrastiveLoss
from keras_bert_core.training import (
    create_optimizer,
    distribution_strategy,
    per_replica_batch_size,
)
from tests.training import mirrored_vs_single
from tests.training.toys import (
    EMBEDDER_BATCH,
    EMBEDDER_STEPS,
    cluster_environments,
    read_output,
    run_script,
    step_losses,
    toy_classifier,
    toy_columns,
    toy_dataset,
    toy_embedder,
)


def test_default_and_one_device_strategies():
    assert distribution_strategy() is tf.distribute.get_strategy()
    assert distribution_strategy("default") is tf.distribute.get_strategy()
    one_device = distribution_strategy("one_device")
    assert isinstance(one_device, tf.distribute.OneDeviceStrategy)
    assert one_device.num_replicas_in_sync == 1


def test_per_replica_batch_size_splits_the_global_batch_or_says_why_not():
    mirrored = distribution_strategy("mirrored", devices=["/cpu:0"])
    assert per_replica_batch_size(32, mirrored) == 32
    assert per_replica_batch_size(8) == 8

    class TwoReplicas:
        num_replicas_in_sync = 2

    assert per_replica_batch_size(32, TwoReplicas()) == 16
    with pytest.raises(ValueError, match="global batch size 33 does not divide evenly across 2"):
        per_replica_batch_size(33, TwoReplicas())


@pytest.mark.parametrize("name, kwargs, message", [
    ("parameter_server", {}, "Unknown distribution strategy 'parameter_server'"),
    ("mirrored", {"num_gpus": 2}, "num_gpus=2 but only 0 GPU"),
])
def test_bad_names_and_options_are_named(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        distribution_strategy(name, **kwargs)


@pytest.mark.parametrize("tf_config, message", [
    (None, "needs the TF_CONFIG environment variable"),
    ("{cluster: ", "TF_CONFIG is not valid JSON"),
    ('{"task": {"type": "worker", "index": 0}}', "TF_CONFIG has no 'cluster'"),
    ('{"cluster": {"worker": ["a:1", "b:2"]}}', "TF_CONFIG has no 'task'"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}',
     "is not in its cluster"),
])
def test_multi_worker_names_what_is_wrong_with_tf_config(monkeypatch, tf_config, message):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError, match=message):
        distribution_strategy("multi_worker")


@pytest.mark.parametrize("address", [None, "local"])
def test_tpu_without_a_tpu_says_so_clearly(monkeypatch, address):
    monkeypatch.delenv("TPU_NAME", raising=False)
    with pytest.raises(RuntimeError, match="No TPU reachable at .*tpu_address='local'"):
        distribution_strategy("tpu", tpu_address=address)


@pytest.mark.slow
def test_a_train_step_compiles_with_xla_on_the_one_device_path():
    if is_op_determinism_enabled():
        pytest.skip("op determinism is enabled: Keras turns jit_compile off")
    strategy = distribution_strategy("one_device")
    histories = []
    initial = None
    for jit_compile in (False, True):
        with strategy.scope():
            model = toy_classifier()
            initial = initial or model.get_weights()
            model.set_weights(initial)
            model.compile(optimizer=create_optimizer(1e-3, 2, 1), jit_compile=jit_compile)
        assert model.jit_compile is jit_compile
        histories.append(model.fit(toy_dataset(8, num_examples=16), verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-5)


@pytest.mark.slow
def test_mirrored_two_replicas_match_one_device_step_for_step(two_cpu_strategy):
    result = mirrored_vs_single.results(two_cpu_strategy)
    assert result["replicas"] == 2
    # Same global batch, same initial weights: the replicas' averaged gradient is the
    # one-device gradient, so the loss curves agree step for step.
    np.testing.assert_allclose(result["mirrored_losses"], result["single_losses"], atol=1e-5)
    assert len(set(np.round(result["single_losses"], 4))) > 1  # the loss moved
    assert result["max_weight_difference"] < 1e-5
    # "auto" means no XLA under tf.distribute (Keras's rule); an explicit True compiles each
    # replica's step instead of Keras's whole step, and computes the same.
    assert result["mirrored_jit_auto"] == [False, False]
    assert result["mirrored_jit_explicit"] == [False, True]
    np.testing.assert_allclose(result["mirrored_xla_losses"], result["single_losses"], atol=1e-5)
    assert result["mirrored_xla_max_weight_difference"] < 1e-5
    assert np.all(np.isfinite(result["pretrainer_xla_losses"]))


@pytest.mark.slow
def test_two_workers_train_with_fit_to_identical_weights(tmp_path):
    run_dir = os.path.join(tmp_path, "run")
    results = [os.path.join(tmp_path, f"worker_{index}.json") for index in range(2)]
    processes = [run_script("multi_worker", 10 + index, run_dir, results[index], env=env)
                 for index, env in enumerate(cluster_environments(2))]
    for process in processes:
        read_output(process)
    reports = []
    for path in results:
        with open(path) as f:
            reports.append(json.load(f))
    assert [report["replicas"] for report in reports] == [2, 2]
    assert [report["iterations"] for report in reports] == [6, 6]
    assert reports[0]["losses"] == reports[1]["losses"]
    weights = [np.load(path + ".npz") for path in results]
    assert len(weights[0].files) > 10
    for name in weights[0].files:
        np.testing.assert_array_equal(weights[0][name], weights[1][name], err_msg=name)
    # Only the chief (worker 0) writes checkpoints and metrics; each worker has its backup.
    assert sorted(os.listdir(os.path.join(run_dir, "backup"))) == ["worker_0", "worker_1"]
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == [
        "epoch_0001.weights.h5", "epoch_0002.weights.h5"]
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        assert [json.loads(line)["step"] for line in f] == [3, 6]
    # The checkpoint is the trained model.
    model = toy_classifier(optimizer=create_optimizer(1e-3, 6, 1))
    model.optimizer.build(model.trainable_variables)  # to load the optimizer's state too
    model.load_weights(os.path.join(run_dir, "checkpoints", "epoch_0002.weights.h5"))
    assert int(model.optimizer.iterations) == 6
    for mine, theirs in zip(model.get_weights(), (weights[0][name] for name in weights[0].files),
                            strict=True):
        np.testing.assert_array_equal(mine, theirs)

    # Then each worker embeds its half of each global batch (EMBEDDER_STEPS steps); the
    # contrastive loss takes its negatives from both halves (gathered across the workers), so
    # both train as one device with the whole batch, from the chief's weights.
    def arrays(suffix):
        runs = [np.load(path + suffix) for path in results]
        return [[run[name] for name in run.files] for run in runs]

    initial, trained = arrays(".embedder_initial.npz"), arrays(".embedder_trained.npz")
    for a, b in zip(*initial, strict=True):
        np.testing.assert_array_equal(a, b)
    embedder = toy_embedder()
    embedder.set_weights(initial[0])
    x = toy_columns(EMBEDDER_STEPS * EMBEDDER_BATCH)
    half = EMBEDDER_BATCH // 2
    vectors = embedder({name: value[:EMBEDDER_BATCH] for name, value in x.items()})
    loss = ContrastiveLoss(scale=5.0)
    halves = (float(loss(np.zeros(half), vectors[:half]))
              + float(loss(np.zeros(half), vectors[half:]))) / 2
    one_device_losses, one_device_weights = step_losses(embedder, x, EMBEDDER_BATCH,
                                                        EMBEDDER_STEPS)
    assert len(set(np.round(one_device_losses, 3))) == EMBEDDER_STEPS  # the steps differ
    for report, weights in zip(reports, trained, strict=True):
        np.testing.assert_allclose(report["embedder_losses"], one_device_losses, atol=1e-5)
        # Not what each worker's own 4 examples' negatives would give.
        assert abs(report["embedder_losses"][0] - halves) > 0.1
        for mine, theirs in zip(weights, one_device_weights, strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-5)
