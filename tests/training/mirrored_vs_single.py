"""Worker for test_distribution: the same training on one device and on a 2-replica
`MirroredStrategy` over two logical CPUs, which must be configured before TensorFlow starts.

Usage: python -m tests.training.mirrored_vs_single RESULT_JSON
"""

import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

from keras_bert_core.training import create_optimizer, distribution_strategy  # noqa: E402
from tests.training.toys import toy_classifier, toy_dataset, write_result  # noqa: E402

STEPS, GLOBAL_BATCH = 5, 8


def train(strategy, initial_weights):
    """Per-step losses and final weights of `STEPS` steps from `initial_weights`."""
    with strategy.scope():
        model = toy_classifier()
        model.set_weights(initial_weights)
        model.compile(optimizer=create_optimizer(1e-3, STEPS, num_warmup_steps=1))
    # One step per epoch, so each epoch's loss is that step's loss, not a running mean.
    history = model.fit(toy_dataset(GLOBAL_BATCH).repeat(), steps_per_epoch=1, epochs=STEPS,
                        verbose=0)
    return history.history["loss"], model.get_weights()


def jit_compile_setting(strategy, jit_compile):
    """What Keras makes of a `jit_compile` argument under `strategy`."""
    with strategy.scope():
        model = toy_classifier()
        model.compile(jit_compile=jit_compile)
    return model.jit_compile


def main(result_path):
    initial = toy_classifier().get_weights()
    single_losses, single_weights = train(distribution_strategy("one_device"), initial)
    mirrored = distribution_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    mirrored_losses, mirrored_weights = train(mirrored, initial)
    write_result(
        result_path,
        replicas=mirrored.num_replicas_in_sync,
        single_losses=single_losses,
        mirrored_losses=mirrored_losses,
        max_weight_difference=max(float(np.max(np.abs(a - b)))
                                  for a, b in zip(single_weights, mirrored_weights, strict=True)),
        mirrored_jit_auto=jit_compile_setting(mirrored, "auto"),
        mirrored_jit_explicit=jit_compile_setting(mirrored, True),
    )


if __name__ == "__main__":
    main(sys.argv[1])
