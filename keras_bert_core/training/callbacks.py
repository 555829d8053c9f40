"""Callbacks of a fault-tolerant training run: backup and restore, checkpoints, logs.

A run directory holds:

    backup/                  the latest training state (weights, optimizer, epoch) to resume
    checkpoints/epoch_0003.weights.h5   periodic checkpoints (model and optimizer weights)
    logs/                    TensorBoard
    metrics.jsonl            one JSON line every `log_every_steps` steps and every epoch

Keras 3 resumes at epoch granularity: `BackupAndRestore` restores weights, optimizer state
and the number of finished epochs, then starts the next epoch from its first batch (a backup
taken mid-epoch, `save_freq=N`, would make the resumed run redo that epoch's earlier steps,
so backups here are taken at epoch ends). So a long run is cut into short "epochs" of
`steps_per_epoch` steps over a repeated dataset: a run killed anywhere loses at most one
epoch of work, and the resumed run ends after exactly the same number of steps. To go on
with the data where the backup left it, rather than from its start, skip the batches
already trained on:

    done = completed_epochs(run_dir)
    model.fit(dataset.repeat().skip(done * steps_per_epoch), steps_per_epoch=steps_per_epoch,
              epochs=total_steps // steps_per_epoch, callbacks=training_callbacks(run_dir))

Example:
>>> import numpy as np, keras, tempfile
>>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
>>> model.compile("sgd", "mse")
>>> run_dir = tempfile.mkdtemp()
>>> x, y = np.ones((8, 4), "float32"), np.ones((8, 1), "float32")
>>> history = model.fit(x, y, batch_size=4, epochs=2, verbose=0,
...                     callbacks=training_callbacks(run_dir, tensorboard=False))
>>> completed_epochs(run_dir), int(model.optimizer.iterations)
(2, 4)
"""

import json
import os

import keras

from keras_bert_core.training.distribution import worker_role


class MetricsLogger(keras.callbacks.Callback):
    """Appends training metrics to a JSON-lines file: every `every_steps` steps and at every
    epoch end (with validation metrics). Each line holds `step` (optimizer updates so far,
    so it continues across restarts), `epoch`, `event` (`"step"` or `"epoch"`),
    `learning_rate` and the logs Keras reports.

    Args:
        path: the `.jsonl` file; appended to, so a resumed run continues it.
        every_steps: log every this many batches of an epoch (a multiple of the model's
            `steps_per_execution`); `None` logs epoch ends only.

    Example:
    >>> import numpy as np, tempfile, os
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics.jsonl")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, verbose=0,
    ...               callbacks=[MetricsLogger(path, every_steps=1)])
    >>> [json.loads(line)["event"] for line in open(path)]
    ['step', 'step', 'epoch']
    """

    def __init__(self, path, every_steps=100):
        super().__init__()
        self.path = path
        self.every_steps = every_steps
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.every_steps and (batch + 1) % self.every_steps == 0:
            self._write("step", self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._write("epoch", epoch + 1, logs)

    def _write(self, event, epoch, logs):
        optimizer = self.model.optimizer
        # convert_to_numpy reads distributed (mirrored) variables too.
        record = {"event": event, "epoch": epoch,
                  "step": int(keras.ops.convert_to_numpy(optimizer.iterations)),
                  "learning_rate": float(keras.ops.convert_to_numpy(optimizer.learning_rate))}
        record.update({key: float(value) for key, value in (logs or {}).items()})
        # Opened per record, so a killed run leaves every finished line on disk.
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


class _PeriodicCheckpoint(keras.callbacks.ModelCheckpoint):
    """`ModelCheckpoint` that saves at the end of every `every_epochs`-th epoch."""

    def __init__(self, filepath, every_epochs, **kwargs):
        super().__init__(filepath, **kwargs)
        self.every_epochs = every_epochs

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every_epochs == 0:
            super().on_epoch_end(epoch, logs)


def training_callbacks(run_dir, checkpoint_every_epochs=1, log_every_steps=100,
                       tensorboard=True, delete_backup=False, strategy=None):
    """The callbacks of a resumable run writing into `run_dir` (see the module docstring).

    Pass them to `model.fit` with a built model (task models and `BertEncoder` are built on
    construction). Under a multi-worker strategy every worker backs up into its own
    `backup/<task>_<index>` folder (each must restore its own state), and only the chief
    writes checkpoints, TensorBoard logs and metrics.

    Args:
        run_dir: the run's directory; created if missing.
        checkpoint_every_epochs: keep a checkpoint every this many epochs; `None` for none.
        log_every_steps: steps between `metrics.jsonl` lines; `None` for epoch ends only.
        tensorboard: also write TensorBoard logs to `run_dir/logs`.
        delete_backup: delete the backup when `fit` completes. Kept by default, so running
            a finished job again resumes at its end and trains no further.
        strategy: the strategy training runs under; default: the current one, so pass it
            when calling this outside `strategy.scope()`.

    Returns:
        A list of callbacks, `keras.callbacks.BackupAndRestore` first.
    """
    is_chief, task = worker_role(strategy)
    # Keras makes the backup folder at its first save, after the first step: every worker
    # joins that step, so the chief has claimed the run directory by then.
    callbacks = [keras.callbacks.BackupAndRestore(
        _backup_dir(run_dir, task), save_freq="epoch", delete_checkpoint=delete_backup)]
    if not is_chief:
        return callbacks
    os.makedirs(run_dir, exist_ok=True)
    if checkpoint_every_epochs:
        os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
        callbacks.append(_PeriodicCheckpoint(
            os.path.join(run_dir, "checkpoints", "epoch_{epoch:04d}.weights.h5"),
            every_epochs=checkpoint_every_epochs, save_weights_only=True))
    if tensorboard:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(run_dir, "logs")))
    callbacks.append(MetricsLogger(os.path.join(run_dir, "metrics.jsonl"), log_every_steps))
    return callbacks


def completed_epochs(run_dir, strategy=None):
    """Epochs finished by the run backed up in `run_dir` (0 if there is no backup): where
    `fit` with `training_callbacks(run_dir)` will resume.

    Args:
        run_dir: the run's directory.
        strategy: the strategy training runs under; default: the current one.
    """
    _, task = worker_role(strategy)
    path = os.path.join(_backup_dir(run_dir, task), "training_metadata.json")
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return json.load(f)["epoch"]


def _backup_dir(run_dir, task):
    return os.path.join(run_dir, "backup", task) if task else os.path.join(run_dir, "backup")
