"""`training_callbacks`: the run directory's contents, and a run killed mid-epoch that
resumes from its backup and ends like one never interrupted."""

import json
import os
import signal
import time

import keras
import numpy as np
import pytest

from keras_bert_core.training import MetricsLogger, completed_epochs, training_callbacks
from tests.training import resumable_run
from tests.training.toys import run_script

STARTUP_TIMEOUT = 300


def small_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


def fit(model, callbacks, epochs=3):
    x = np.arange(32, dtype="float32").reshape(8, 4) / 32
    return model.fit(x, x.sum(axis=1), batch_size=4, epochs=epochs, verbose=0,
                     callbacks=callbacks)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_a_run_directory_holds_backup_checkpoints_logs_and_metrics(tmp_path):
    run_dir = str(tmp_path / "run")
    callbacks = training_callbacks(run_dir, checkpoint_every_epochs=2, log_every_steps=1)
    assert isinstance(callbacks[0], keras.callbacks.BackupAndRestore)
    fit(small_model(), callbacks)
    assert os.listdir(os.path.join(run_dir, "checkpoints")) == ["epoch_0002.weights.h5"]
    assert os.listdir(os.path.join(run_dir, "logs"))  # TensorBoard wrote something
    assert completed_epochs(run_dir) == 3
    records = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
    steps = [r["step"] for r in records if r["event"] == "step"]
    assert steps == [1, 2, 3, 4, 5, 6]
    epochs = [r for r in records if r["event"] == "epoch"]
    assert [(r["epoch"], r["step"]) for r in epochs] == [(1, 2), (2, 4), (3, 6)]
    assert all(np.isfinite(r["loss"]) and r["learning_rate"] == pytest.approx(0.01)
               for r in records)


def test_running_a_finished_job_again_trains_no_further(tmp_path):
    run_dir = str(tmp_path / "run")
    model = small_model()
    fit(model, training_callbacks(run_dir, tensorboard=False))
    weights = model.get_weights()
    again = small_model()
    history = fit(again, training_callbacks(run_dir, tensorboard=False))
    assert history.history == {}  # no epoch left to run
    assert int(again.optimizer.iterations) == 6
    for restored, trained in zip(again.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(restored, trained)


def test_options_leave_parts_out_and_can_delete_the_backup(tmp_path):
    run_dir = str(tmp_path / "run")
    callbacks = training_callbacks(run_dir, checkpoint_every_epochs=None, tensorboard=False,
                                   log_every_steps=None, delete_backup=True)
    assert [type(c) for c in callbacks] == [keras.callbacks.BackupAndRestore, MetricsLogger]
    fit(small_model(), callbacks)
    assert sorted(os.listdir(run_dir)) == ["metrics.jsonl"]
    assert completed_epochs(run_dir) == 0
    assert [r["event"] for r in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))] == [
        "epoch"] * 3


def wait_for(path, process, timeout=STARTUP_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if process.poll() is not None:
            pytest.fail(f"the training process ended early:\n{process.stdout.read()[-5000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {path} after {timeout} s")
        time.sleep(0.2)


@pytest.mark.slow
def test_a_run_killed_mid_epoch_resumes_from_its_backup_and_ends_as_if_never_stopped(tmp_path):
    run_dir = str(tmp_path / "run")
    steps_per_epoch = resumable_run.STEPS_PER_EPOCH
    total_steps = steps_per_epoch * resumable_run.EPOCHS
    # Killed two steps into epoch 2: epoch 1 is backed up and checkpointed, steps 5-6 are lost.
    first = run_script("resumable_run", run_dir, tmp_path / "first.json",
                       "--pause-at-step", steps_per_epoch + 2)
    # Meanwhile, the same training uninterrupted, in this process.
    reference, _, _ = resumable_run.train(str(tmp_path / "reference"))
    wait_for(os.path.join(run_dir, "paused"), first)
    checkpoint = os.path.join(run_dir, "checkpoints", "epoch_0001.weights.h5")
    before_kill = os.stat(checkpoint).st_mtime_ns
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    assert completed_epochs(run_dir) == 1

    second = run_script("resumable_run", run_dir, tmp_path / "second.json")
    output, _ = second.communicate(timeout=STARTUP_TIMEOUT)
    assert second.returncode == 0, output[-5000:]
    with open(tmp_path / "second.json") as f:
        result = json.load(f)
    assert result["resumed_from_epoch"] == 1
    assert result["epochs_run"] == resumable_run.EPOCHS - 1
    assert result["iterations"] == total_steps == int(reference.optimizer.iterations)
    # Nothing lost: the checkpoint from before the kill is untouched, the later ones exist,
    # and the metrics cover every step (5 and 6 twice: lost with the kill, then redone).
    assert os.stat(checkpoint).st_mtime_ns == before_kill
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == [
        f"epoch_{epoch:04d}.weights.h5" for epoch in range(1, resumable_run.EPOCHS + 1)]
    records = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
    steps = [r["step"] for r in records if r["event"] == "step"]
    assert steps == [1, 2, 3, 4, 5, 6, 5, 6, 7, 8, 9, 10, 11, 12]
    # Same data (skipped to where the backup left it), same optimizer state: same weights.
    resumed = np.load(tmp_path / "second.json.npz")
    for index, expected in enumerate(reference.get_weights()):
        np.testing.assert_allclose(resumed[f"arr_{index}"], expected, atol=1e-6)
