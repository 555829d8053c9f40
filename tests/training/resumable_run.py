"""Worker for test_callbacks: a resumable training run (`fit_resumable` with
`training_callbacks`).

With --pause-at-step N it touches RUN_DIR/paused after N optimizer steps and waits there to
be killed (the test sends SIGKILL, as a preempted machine would). Started again on the same
RUN_DIR it resumes from the last backup, skipping the batches already trained on.

Usage: python -m tests.training.resumable_run RUN_DIR RESULT_JSON [--pause-at-step N]
"""

import argparse
import os
import time

import keras
import numpy as np

from keras_bert_core.training import (
    completed_steps,
    create_optimizer,
    fit_resumable,
    training_callbacks,
)
from tests.training.toys import toy_classifier, toy_dataset, write_result

STEPS_PER_EPOCH, EPOCHS, GLOBAL_BATCH, BACKUP_EVERY = 4, 3, 8, 3


class PauseAt(keras.callbacks.Callback):
    """Signals through a file after `step` optimizer steps, then waits to be killed."""

    def __init__(self, step, signal_path):
        super().__init__()
        self.step = step
        self.signal_path = signal_path

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations) == self.step:
            open(self.signal_path, "w").close()
            time.sleep(600)


def train(run_dir, pause_at_step=None):
    """Trains `STEPS_PER_EPOCH * EPOCHS` steps in all, resuming from `run_dir`'s backup."""
    # The same initial weights every start; a resumed run replaces them from its backup.
    keras.utils.set_random_seed(0)
    model = toy_classifier(
        optimizer=create_optimizer(1e-3, STEPS_PER_EPOCH * EPOCHS, num_warmup_steps=2))
    resumed_from_step = completed_steps(run_dir)
    callbacks = training_callbacks(run_dir, log_every_steps=1, backup_every_steps=BACKUP_EVERY)
    if pause_at_step:
        callbacks.append(PauseAt(pause_at_step, os.path.join(run_dir, "paused")))
    fit_resumable(model, toy_dataset(GLOBAL_BATCH), run_dir, epochs=EPOCHS,
                  steps_per_epoch=STEPS_PER_EPOCH, callbacks=callbacks, verbose=0)
    return model, resumed_from_step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("result")
    parser.add_argument("--pause-at-step", type=int)
    args = parser.parse_args()
    model, resumed_from_step = train(args.run_dir, args.pause_at_step)
    np.savez(args.result + ".npz", *model.get_weights())
    write_result(args.result, resumed_from_step=resumed_from_step,
                 iterations=int(model.optimizer.iterations))


if __name__ == "__main__":
    main()
