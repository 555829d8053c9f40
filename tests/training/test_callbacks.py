"""`training_callbacks` and `fit_resumable`: the run directory's contents, a torn backup,
a diverged loss, and a run killed mid-epoch that resumes from its backup and ends like one
never interrupted."""

import json
import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.training import (
    MetricsLogger,
    StepBackup,
    StopOnNonFiniteLoss,
    TrainingError,
    completed_steps,
    fit_resumable,
    training_callbacks,
)
from tests.training import resumable_run
from tests.training.toys import run_script, wait_until

STARTUP_TIMEOUT = 300


def small_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse")
    return model


def fit(model, run_dir, callbacks, epochs=3):
    """Two steps an epoch."""
    x = np.arange(32, dtype="float32").reshape(8, 4) / 32
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1))).batch(4)
    return fit_resumable(model, data, run_dir, epochs=epochs, steps_per_epoch=2,
                         callbacks=callbacks, verbose=0)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_a_run_directory_holds_backup_checkpoints_logs_and_metrics(tmp_path):
    run_dir = str(tmp_path / "run")
    callbacks = training_callbacks(run_dir, checkpoint_every_epochs=2, log_every_steps=1,
                                   backup_every_steps=5)
    assert [type(c) for c in callbacks[::len(callbacks) - 1]] == [StopOnNonFiniteLoss, StepBackup]
    fit(small_model(), run_dir, callbacks)
    assert os.listdir(os.path.join(run_dir, "checkpoints")) == ["epoch_0002.weights.h5"]
    assert os.listdir(os.path.join(run_dir, "logs"))  # TensorBoard wrote something
    # Backups at step 5 and at epoch ends (2, 4, 6); the two newest are kept.
    assert sorted(os.listdir(os.path.join(run_dir, "backup"))) == [
        "step_00000005.weights.h5", "step_00000006.weights.h5"]
    assert completed_steps(run_dir) == 6
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
    fit(model, run_dir, training_callbacks(run_dir, tensorboard=False))
    weights = model.get_weights()
    again = small_model()
    assert fit(again, run_dir, training_callbacks(run_dir, tensorboard=False)) is None
    assert int(again.optimizer.iterations) == 6
    for restored, trained in zip(again.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(restored, trained)


def test_a_torn_backup_falls_back_to_the_one_before(tmp_path):
    run_dir = str(tmp_path / "run")
    model = small_model()
    fit(model, run_dir, training_callbacks(run_dir, tensorboard=False, backup_every_steps=1),
        epochs=2)
    backup = StepBackup(os.path.join(run_dir, "backup"))
    newest, previous = backup.backups()[-1], backup.backups()[-2]
    with open(newest, "r+b") as f:  # as a disk-full or a copy cut short would leave it
        f.truncate(os.path.getsize(newest) // 2)
    again = small_model()
    with pytest.warns(UserWarning, match="step_00000004.weights.h5 cannot be read"):
        assert backup.restore(again) == 3
    assert previous.endswith("step_00000003.weights.h5")
    with open(previous, "wb") as f:
        f.write(b"not a backup")
    with pytest.warns(UserWarning), pytest.raises(TrainingError, match="none of the backups"):
        backup.restore(small_model())


def test_a_non_finite_loss_stops_training_before_anything_is_saved(tmp_path):
    run_dir = str(tmp_path / "run")
    model = small_model()
    model.compile(keras.optimizers.SGD(1e30), "mse")  # diverges within a few steps
    with pytest.raises(TrainingError, match=r"the loss became (nan|inf) at step \d+"):
        fit(model, run_dir, training_callbacks(run_dir, tensorboard=False,
                                               backup_every_steps=1), epochs=50)
    step = completed_steps(run_dir)
    restored = small_model()
    StepBackup(os.path.join(run_dir, "backup")).restore(restored)
    assert all(np.isfinite(w).all() for w in restored.get_weights()), step


def test_options_leave_parts_out(tmp_path):
    run_dir = str(tmp_path / "run")
    callbacks = training_callbacks(run_dir, checkpoint_every_epochs=None, tensorboard=False,
                                   log_every_steps=None, backup_every_steps=None)
    assert [type(c) for c in callbacks] == [StopOnNonFiniteLoss, MetricsLogger, StepBackup]
    fit(small_model(), run_dir, callbacks)
    assert sorted(os.listdir(run_dir)) == ["backup", "metrics.jsonl"]
    assert [r["event"] for r in read_jsonl(os.path.join(run_dir, "metrics.jsonl"))] == [
        "epoch"] * 3


@pytest.mark.slow
def test_a_run_killed_mid_epoch_resumes_from_its_backup_and_ends_as_if_never_stopped(tmp_path):
    run_dir = str(tmp_path / "run")
    steps_per_epoch = resumable_run.STEPS_PER_EPOCH
    total_steps = steps_per_epoch * resumable_run.EPOCHS
    # Killed at step 10, two steps into epoch 3: the backups of steps 8 (epoch end) and 9
    # (every 3 steps) are on disk, so one step is lost.
    kill_at = 2 * steps_per_epoch + 2
    first = run_script("resumable_run", run_dir, tmp_path / "first.json",
                       "--pause-at-step", kill_at)
    # Meanwhile, the same training uninterrupted, in this process.
    reference, _ = resumable_run.train(str(tmp_path / "reference"))
    paused = os.path.join(run_dir, "paused")
    wait_until(lambda: os.path.exists(paused), first, paused, timeout=STARTUP_TIMEOUT)
    checkpoint = os.path.join(run_dir, "checkpoints", "epoch_0002.weights.h5")
    before_kill = os.stat(checkpoint).st_mtime_ns
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    assert completed_steps(run_dir) == 9

    second = run_script("resumable_run", run_dir, tmp_path / "second.json")
    output, _ = second.communicate(timeout=STARTUP_TIMEOUT)
    assert second.returncode == 0, output[-5000:]
    with open(tmp_path / "second.json") as f:
        result = json.load(f)
    assert result["resumed_from_step"] == 9
    assert result["iterations"] == total_steps == int(reference.optimizer.iterations)
    # Nothing lost: the checkpoint from before the kill is untouched, the later ones exist,
    # and the metrics hold every step once, in order (step 10, logged before the kill, was
    # dropped on resume and logged again when it was trained again).
    assert os.stat(checkpoint).st_mtime_ns == before_kill
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == [
        f"epoch_{epoch:04d}.weights.h5" for epoch in range(1, resumable_run.EPOCHS + 1)]
    records = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
    assert [r["step"] for r in records if r["event"] == "step"] == list(range(1, 13))
    assert [(r["epoch"], r["step"]) for r in records if r["event"] == "epoch"] == [
        (1, 4), (2, 8), (3, 12)]
    # Same data (skipped to where the backup left it), same optimizer state: same weights.
    resumed = np.load(tmp_path / "second.json.npz")
    for index, expected in enumerate(reference.get_weights()):
        np.testing.assert_allclose(resumed[f"arr_{index}"], expected, atol=1e-6)
