"""Callbacks of a fault-tolerant training run: backup and resume, checkpoints, logs.

A run directory holds:

    backup/step_00000300.weights.h5   the training state (model and optimizer weights)
                             every `backup_every_steps` steps and at every epoch end; the
                             two newest are kept, so a backup torn by a kill falls back to
                             the one before
    checkpoints/epoch_0003.weights.h5   periodic checkpoints (model and optimizer weights)
    logs/                    TensorBoard
    metrics.jsonl            one JSON line every `log_every_steps` steps and every epoch

`fit_resumable` trains a model for a number of steps in all and, started again on the same
run directory after a kill, continues from the newest intact backup at the step it was
taken: weights, optimizer state and the position in the (endless) dataset, whose batches
already trained on are skipped. Records of `metrics.jsonl` past that step are dropped, so
no step is logged twice. A run killed anywhere loses at most `backup_every_steps` steps.

Example:
>>> import numpy as np, keras, tempfile, tensorflow as tf
>>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
>>> model.compile("sgd", "mse")
>>> run_dir = tempfile.mkdtemp()
>>> data = tf.data.Dataset.from_tensors((tf.ones((4, 4)), tf.ones((4, 1))))
>>> history = fit_resumable(model, data, run_dir, epochs=2, steps_per_epoch=3, verbose=0,
...                         callbacks=training_callbacks(run_dir, tensorboard=False))
>>> completed_steps(run_dir), int(model.optimizer.iterations)
(6, 6)
"""

import json
import math
import os
import re
import warnings

import keras

from keras_bert_core.errors import TrainingError
from keras_bert_core.extras import require
from keras_bert_core.files import partial_path, remove
from keras_bert_core.keras_internals import batch_counter
from keras_bert_core.models.lora import add_lora_state, restore_lora_state
from keras_bert_core.models.text_inputs import read_with_one_iterator
from keras_bert_core.training.distribution import worker_role

_BACKUP_NAME = "step_{:08d}.weights.h5"
_BACKUP_PATTERN = re.compile(r"step_(\d{8})\.weights\.h5")


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training with a `TrainingError` at the first step whose loss is NaN or
    infinite. Put it before the callbacks that save, so that no backup or checkpoint holds
    the diverged weights."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            raise TrainingError(
                f"the loss became {float(loss)} at step {_step(self.model)}: training "
                "diverged; lower the learning rate, or check the data (e.g. an empty or "
                "all-padding batch)")


class StepBackup(keras.callbacks.Callback):
    """Backs up the training state (model and optimizer weights) every `every_steps`
    training steps and at every epoch end, keeping the `keep` newest backups; `restore`
    reads the newest intact one back. Each backup is written beside its final name and
    renamed into place when complete, so a kill never leaves a torn file under a backup's
    name (a file torn some other way is passed over by `restore`).

    Args:
        folder: where the backups live; created at the first backup.
        every_steps: steps between backups; `None` for epoch ends only.
        keep: how many backups to keep.

    Example:
    >>> import numpy as np, tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = StepBackup(tempfile.mkdtemp(), every_steps=2)
    >>> _ = model.fit(np.ones((10, 2)), np.ones((10, 1)), batch_size=2, verbose=0,
    ...               callbacks=[backup])
    >>> [os.path.basename(path) for path in backup.backups()]
    ['step_00000004.weights.h5', 'step_00000005.weights.h5']
    """

    def __init__(self, folder, every_steps=50, keep=2):
        super().__init__()
        self.folder = folder
        self.every_steps = every_steps
        self.keep = keep

    def backups(self):
        """The backup files, oldest first."""
        if not os.path.isdir(self.folder):
            return []
        names = sorted(n for n in os.listdir(self.folder) if _BACKUP_PATTERN.fullmatch(n))
        return [os.path.join(self.folder, name) for name in names]

    def restore(self, model):
        """Loads the newest backup that reads back into `model` (its optimizer is built
        first, so that its state is restored too); returns its step, 0 without backups."""
        backups = self.backups()
        if backups and not model.optimizer.built:
            with model.distribute_strategy.scope():
                model.optimizer.build(model.trainable_variables)
        for path in reversed(backups):
            try:
                model.load_weights(path)
                restore_lora_state(model, path)
            except Exception as error:  # noqa: BLE001 - torn, truncated or foreign files
                warnings.warn(f"{path} cannot be read ({type(error).__name__}); trying the "
                              "backup before it", stacklevel=2)
                continue
            return _step(model)
        if backups:
            raise TrainingError(f"none of the backups in {self.folder} can be read; start "
                                "the run again without resuming")
        return 0

    def on_train_batch_end(self, batch, logs=None):
        # An epoch's last step is backed up at its end, after the epoch's logs and checkpoint.
        last_of_epoch = batch + 1 == self.params.get("steps")
        if self.every_steps and _step(self.model) % self.every_steps == 0 and not last_of_epoch:
            self._back_up()

    def on_epoch_end(self, epoch, logs=None):
        self._back_up()

    def _back_up(self):
        path = os.path.join(self.folder, _BACKUP_NAME.format(_step(self.model)))
        if os.path.exists(path):  # an epoch end on a backup step
            return
        os.makedirs(self.folder, exist_ok=True)
        partial = partial_path(path)
        try:
            self.model.save_weights(partial)
            add_lora_state(self.model, partial)  # save_weights keeps merged kernels only
            os.replace(partial, path)
        finally:
            remove(partial)
        for old in self.backups()[:-self.keep]:
            remove(old)


def _step(model):
    """Training steps (batches) so far. With gradient accumulation Keras's public
    `iterations` counts optimizer updates, one per `gradient_accumulation_steps` batches;
    `keras_internals.batch_counter` counts every batch, where a resumed run must continue."""
    optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)  # loss scaling
    # convert_to_numpy reads distributed (mirrored) variables too.
    return int(keras.ops.convert_to_numpy(batch_counter(optimizer)))


class MetricsLogger(keras.callbacks.Callback):
    """Appends training metrics to a JSON-lines file: every `every_steps` training steps
    and at every epoch end (with validation metrics). Each line holds `step` (training
    steps so far, batches, so it continues across restarts), `epoch`, `event` (`"step"` or
    `"epoch"`), `learning_rate` and the logs Keras reports.

    Args:
        path: the `.jsonl` file; appended to, so a resumed run continues it.
        every_steps: log every this many training steps (a multiple of the model's
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

    def forget_after(self, step):
        """Drops the records of steps after `step` (those a resumed run trains again)."""
        if not os.path.isfile(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            lines = f.readlines()
        # A kill can leave a last line cut short: it goes too.
        kept = [line for line in lines if _complete_record(line, step)]
        if len(kept) < len(lines):
            partial = partial_path(self.path)
            with open(partial, "w", encoding="utf-8") as f:
                f.writelines(kept)
            os.replace(partial, self.path)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.every_steps and _step(self.model) % self.every_steps == 0:
            self._write("step", self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._write("epoch", epoch + 1, logs)

    def _write(self, event, epoch, logs):
        optimizer = self.model.optimizer
        record = {"event": event, "epoch": epoch, "step": _step(self.model),
                  "learning_rate": float(keras.ops.convert_to_numpy(optimizer.learning_rate))}
        record.update({key: float(value) for key, value in (logs or {}).items()})
        # Opened per record, so a killed run leaves every finished line on disk.
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _complete_record(line, last_step):
    try:
        return json.loads(line)["step"] <= last_step
    except (ValueError, KeyError, TypeError):
        return False


class _PeriodicCheckpoint(keras.callbacks.ModelCheckpoint):
    """`ModelCheckpoint` that saves at the end of every `every_epochs`-th epoch."""

    def __init__(self, filepath, every_epochs, **kwargs):
        super().__init__(filepath, **kwargs)
        self.every_epochs = every_epochs

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every_epochs == 0:
            super().on_epoch_end(epoch, logs)


def training_callbacks(run_dir, checkpoint_every_epochs=1, log_every_steps=100,
                       backup_every_steps=50, tensorboard=True, strategy=None):
    """The callbacks of a resumable run writing into `run_dir` (see the module docstring);
    pass them to `fit_resumable`.

    Under a multi-worker strategy every worker backs up into its own `backup/<task>_<index>`
    folder (each must restore its own state), and only the chief writes checkpoints,
    TensorBoard logs and metrics.

    Args:
        run_dir: the run's directory; created if missing.
        checkpoint_every_epochs: keep a checkpoint every this many epochs; `None` for none.
        log_every_steps: steps between `metrics.jsonl` lines; `None` for epoch ends only.
        backup_every_steps: steps between backups (and at every epoch end); `None` for
            epoch ends only.
        tensorboard: also write TensorBoard logs to `run_dir/logs` (needs tensorboard, of
            the cli extra).
        strategy: the strategy training runs under; default: the current one, so pass it
            when calling this outside `strategy.scope()`.

    Returns:
        A list of callbacks: `StopOnNonFiniteLoss` first, so that nothing saves diverged
        weights, and `StepBackup` last, so that what a step or an epoch writes is on disk
        before its backup (a kill in between redoes the step; `fit_resumable` drops its
        records of `metrics.jsonl`).
    """
    is_chief, task = worker_role(strategy)
    # The backup folder is made at the first backup, after the first step: every worker
    # joins that step, so the chief has claimed the run directory by then.
    backup = StepBackup(_backup_dir(run_dir, task), every_steps=backup_every_steps)
    if not is_chief:
        return [StopOnNonFiniteLoss(), backup]
    if tensorboard:  # Keras's callback would fail at the first step without it
        require("tensorboard", "TensorBoard logs")
    callbacks = [StopOnNonFiniteLoss()]
    os.makedirs(run_dir, exist_ok=True)
    if checkpoint_every_epochs:
        os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
        callbacks.append(_PeriodicCheckpoint(
            os.path.join(run_dir, "checkpoints", "epoch_{epoch:04d}.weights.h5"),
            every_epochs=checkpoint_every_epochs, save_weights_only=True))
    if tensorboard:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(run_dir, "logs")))
    callbacks.append(MetricsLogger(os.path.join(run_dir, "metrics.jsonl"), log_every_steps))
    return [*callbacks, backup]


def fit_resumable(model, dataset, run_dir, *, epochs, steps_per_epoch, callbacks,
                  **fit_kwargs):
    """Trains `model` for `epochs * steps_per_epoch` steps in all, continuing the run backed
    up in `run_dir` where its newest intact backup left it.

    The batches already trained on are skipped (`dataset` is repeated, so pass one pass
    over the data or an endless stream), and an epoch cut short by the kill is finished
    first, with its own `fit` call: epochs keep their boundaries, so checkpoints, logs and
    the learning-rate schedule come out as in a run never stopped. A finished run trains no
    further.

    Args:
        model: a compiled model; its weights are replaced by the backup's, if any.
        dataset: a `tf.data.Dataset` of training batches, in the same order every start
            (give shuffles a seed).
        run_dir: the run's directory.
        epochs: epochs in all, the finished ones included.
        steps_per_epoch: steps of each epoch.
        callbacks: from `training_callbacks(run_dir)` (it must hold a `StepBackup`),
            with any others.
        **fit_kwargs: passed to `fit` (`validation_data`, `verbose`, `class_weight`...).

    Returns:
        The `History` of the last `fit` call, or None if the run had already finished.
    """
    backup = next((c for c in callbacks if isinstance(c, StepBackup)), None)
    if backup is None:
        raise ValueError("callbacks hold no StepBackup: pass training_callbacks(run_dir)")
    fit_kwargs.setdefault("shuffle", False)  # a dataset shuffles itself
    if hasattr(fit_kwargs.get("validation_data"), "cardinality"):  # a tf.data.Dataset
        fit_kwargs["validation_data"] = read_with_one_iterator(
            fit_kwargs["validation_data"], fit_kwargs, "validation_steps",
            model.distribute_strategy)
    step = backup.restore(model)
    for callback in callbacks:
        if isinstance(callback, MetricsLogger):
            callback.forget_after(step)
    dataset = dataset.repeat()
    epoch, into_epoch = divmod(step, steps_per_epoch)
    history = None
    if into_epoch and epoch < epochs:
        # The epoch the kill cut short runs its remaining steps, then this fit stops.
        stop = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda *_: setattr(model, "stop_training", True))
        history = model.fit(dataset.skip(step), initial_epoch=epoch, epochs=epochs,
                            steps_per_epoch=steps_per_epoch - into_epoch,
                            callbacks=[*callbacks, stop], **fit_kwargs)
        epoch += 1
    if epoch < epochs:
        history = model.fit(dataset.skip(epoch * steps_per_epoch), initial_epoch=epoch,
                            epochs=epochs, steps_per_epoch=steps_per_epoch,
                            callbacks=callbacks, **fit_kwargs)
    return history


def completed_steps(run_dir, strategy=None):
    """Steps trained by the run backed up in `run_dir` (0 without a backup), by its newest
    backup's name: where `fit_resumable` continues, unless that backup is torn.

    Args:
        run_dir: the run's directory.
        strategy: the strategy training runs under; default: the current one.
    """
    _, task = worker_role(strategy)
    backups = StepBackup(_backup_dir(run_dir, task)).backups()
    return int(_BACKUP_PATTERN.fullmatch(os.path.basename(backups[-1])).group(1)) if backups else 0


def _backup_dir(run_dir, task):
    return os.path.join(run_dir, "backup", task) if task else os.path.join(run_dir, "backup")
