"""Worker for test_distribution: one of two `MultiWorkerMirroredStrategy` workers on
localhost (the test sets TF_CONFIG). Each worker starts from its own random weights and sees
its own half of every batch; equal final weights prove broadcast and all-reduce. Then each
fits a tiny `BertEmbedder` with `ContrastiveLoss` on its half of fixed global batches, whose
negatives must come from both workers' halves.

Usage: python -m tests.training.multi_worker SEED RUN_DIR RESULT_JSON
"""

import sys

from keras_bert_core.training import distribution_strategy

# Collective ops must be configured before TensorFlow runs anything.
strategy = distribution_strategy("multi_worker", communication="ring")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_bert_core.training import (  # noqa: E402
    create_optimizer,
    fit_resumable,
    training_callbacks,
)
from tests.training.toys import (  # noqa: E402
    EMBEDDER_BATCH,
    EMBEDDER_STEPS,
    step_losses,
    toy_classifier,
    toy_columns,
    toy_dataset,
    toy_embedder,
    write_result,
)

STEPS_PER_EPOCH, EPOCHS, GLOBAL_BATCH = 3, 2, 8


def main(seed, run_dir, result_path):
    keras.utils.set_random_seed(int(seed))
    with strategy.scope():
        model = toy_classifier(
            optimizer=create_optimizer(1e-3, STEPS_PER_EPOCH * EPOCHS, num_warmup_steps=1))
    history = fit_resumable(
        model, toy_dataset(GLOBAL_BATCH), run_dir, steps_per_epoch=STEPS_PER_EPOCH,
        epochs=EPOCHS, verbose=0,
        callbacks=training_callbacks(run_dir, tensorboard=False, strategy=strategy))
    weights = model.get_weights()
    np.savez(result_path + ".npz", *weights)
    with strategy.scope():
        embedder = toy_embedder()
    np.savez(result_path + ".embedder_initial.npz", *embedder.get_weights())  # the chief's
    embedder_losses, trained = step_losses(
        embedder, toy_columns(EMBEDDER_STEPS * EMBEDDER_BATCH), EMBEDDER_BATCH, EMBEDDER_STEPS)
    np.savez(result_path + ".embedder_trained.npz", *trained)
    write_result(result_path, replicas=strategy.num_replicas_in_sync,
                 iterations=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
                 losses=history.history["loss"], embedder_losses=embedder_losses)


if __name__ == "__main__":
    main(*sys.argv[1:])
