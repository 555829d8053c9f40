"""Data-parallel fine-tuning with `tf.distribute` and plain `model.fit`.

Pick the strategy by name; build the model and optimizer inside `strategy.scope()`; batch by
the global batch size with `drop_remainder=True` (static shapes); Keras splits each batch
across the replicas. Masks and ids stay int32 end to end, so cross-replica reductions work.

    # two replicas on one machine (GPUs, or here two logical CPUs)
    python examples/distributed_training.py --strategy mirrored --cpu-replicas 2
    # several machines: the same command on each, TF_CONFIG naming the cluster and the task
    TF_CONFIG='{"cluster": {"worker": ["host1:12345", "host2:12345"]},
                "task": {"type": "worker", "index": 0}}' \\
        python examples/distributed_training.py --strategy multi_worker
    # a Cloud TPU VM
    python examples/distributed_training.py --strategy tpu --tpu local
    python examples/distributed_training.py --smoke   # seconds, for tests
"""

import argparse
import os
import random
import tempfile

import numpy as np
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.tasks.classification import TextClassificationData, classification_dataset
from keras_bert_core.text import BertPreprocessor
from keras_bert_core.training import (
    create_optimizer,
    distribution_strategy,
    fit_resumable,
    per_replica_batch_size,
    training_callbacks,
)

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "plot", "was",
         "great", "good", "fine", "bad", "awful", "dull", "."]


def toy_data(rows, seed=0):
    rng = random.Random(seed)
    labels = [rng.randint(0, 1) for _ in range(rows)]
    texts = [f"the {rng.choice(['film', 'plot'])} was "
             f"{rng.choice(['great', 'good', 'fine'] if label else ['bad', 'awful', 'dull'])} ."
             for label in labels]
    return TextClassificationData(texts, None, np.array(labels, np.int32), ["neg", "pos"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="mirrored",
                        choices=["default", "one_device", "mirrored", "multi_worker", "tpu"])
    parser.add_argument("--tpu", help="for --strategy tpu: 'local', a name or grpc:// address")
    parser.add_argument("--cpu-replicas", type=int, default=2,
                        help="without GPUs, split the CPU into this many logical devices so "
                             "--strategy mirrored has replicas to mirror")
    parser.add_argument("--global-batch-size", type=int, default=16)
    parser.add_argument("--run-dir", default=os.path.join(tempfile.gettempdir(), "kbc_dist"))
    parser.add_argument("--smoke", action="store_true", help="a few steps")
    args = parser.parse_args()
    epochs = 1 if args.smoke else 5

    # Devices are configured before any TensorFlow op runs.
    cpus = tf.config.list_physical_devices("CPU")
    if args.strategy == "mirrored" and not tf.config.list_physical_devices("GPU"):
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * args.cpu_replicas)
    devices = ([f"/cpu:{i}" for i in range(args.cpu_replicas)]
               if args.strategy == "mirrored" and not tf.config.list_physical_devices("GPU")
               else None)
    strategy = (distribution_strategy("mirrored", devices=devices) if devices
                else distribution_strategy(args.strategy, tpu_address=args.tpu))
    print(f"{type(strategy).__name__}: {strategy.num_replicas_in_sync} replica(s), "
          f"{per_replica_batch_size(args.global_batch_size, strategy)} examples each per step")

    data = toy_data(64 if args.smoke else 1024)
    preprocessor = BertPreprocessor(WORDS, seq_length=16)
    dataset = classification_dataset(data, preprocessor, args.global_batch_size,
                                     training=True, seed=1)
    steps = epochs * (len(data) // args.global_batch_size)
    with strategy.scope():
        encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(WORDS)))
        model = BertClassifier(encoder, num_classes=2)
        model.compile(optimizer=create_optimizer(1e-3, steps, steps // 10))
    # Backups make the run resumable (run it again after a kill: it continues where its
    # newest backup left it); under multi_worker only the chief writes logs.
    history = fit_resumable(model, dataset, args.run_dir, epochs=epochs,
                            steps_per_epoch=len(data) // args.global_batch_size, verbose=2,
                            callbacks=training_callbacks(args.run_dir, tensorboard=False,
                                                         strategy=strategy))
    if history:  # None when an earlier run in --run-dir had already finished
        print(f"accuracy {history.history['accuracy'][-1]:.2f}")


if __name__ == "__main__":
    main()
