"""Worker for test_callbacks: a resumable training run on `training_callbacks`.

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

from keras_bert_core.training import completed_epochs, create_optimizer, training_callbacks
from tests.training.toys import toy_classifier, toy_dataset, write_result

STEPS_PER_EPOCH, EPOCHS, GLOBAL_BATCH = 4, 3, 8


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
    resumed_from_epoch = completed_epochs(run_dir)
    dataset = toy_dataset(GLOBAL_BATCH).repeat().skip(resumed_from_epoch * STEPS_PER_EPOCH)
    callbacks = training_callbacks(run_dir, log_every_steps=1)
    if pause_at_step:
        callbacks.append(PauseAt(pause_at_step, os.path.join(run_dir, "paused")))
    history = model.fit(dataset, steps_per_epoch=STEPS_PER_EPOCH, epochs=EPOCHS, verbose=0,
                        callbacks=callbacks)
    return model, resumed_from_epoch, len(history.history["loss"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("result")
    parser.add_argument("--pause-at-step", type=int)
    args = parser.parse_args()
    model, resumed_from_epoch, epochs_run = train(args.run_dir, args.pause_at_step)
    np.savez(args.result + ".npz", *model.get_weights())
    write_result(args.result, resumed_from_epoch=resumed_from_epoch, epochs_run=epochs_run,
                 iterations=int(model.optimizer.iterations))


if __name__ == "__main__":
    main()
