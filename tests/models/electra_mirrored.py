"""For test_electra_pretrainer: `ElectraPretrainer.fit` on a 2-replica `MirroredStrategy`
over the two logical CPUs tests/conftest.py configures, with Keras's step and with each
replica's step compiled by XLA."""

import keras
import numpy as np
import tensorflow as tf

import keras_bert_core as kbc


def batches():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, (8, 12)).astype("int32")
    positions = np.tile(np.array([[1, 4, 7]], "int32"), (8, 1))
    masked_ids = np.take_along_axis(ids, positions, axis=1)
    np.put_along_axis(ids, positions, 4, axis=1)  # [MASK]
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": np.ones_like(ids), "masked_positions": positions}
    weights = np.ones((8, 3), "float32")
    return tf.data.Dataset.from_tensors((x, {"mlm": masked_ids}, {"mlm": weights})).repeat(4)


def fit(strategy, jit_compile):
    keras.utils.set_random_seed(0)
    with strategy.scope():
        config = kbc.BertConfig.preset("electra_small", vocab_size=64, num_layers=1,
                                       hidden_size=16, num_heads=2, intermediate_size=32,
                                       embedding_size=8, max_position_embeddings=16)
        model = kbc.ElectraPretrainer(kbc.BertEncoder(config), generator_size=0.5, seed=0)
        model.compile(jit_compile=jit_compile)
    history = model.fit(batches(), epochs=2, verbose=0)
    return {"loss": history.history["loss"], "rtd_accuracy": history.history["rtd_accuracy"],
            "per_replica_xla": model.jit_compile_per_replica}


def results(mirrored):
    return {"replicas": mirrored.num_replicas_in_sync,
            "keras_step": fit(mirrored, False), "xla_per_replica": fit(mirrored, True)}
