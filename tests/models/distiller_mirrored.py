"""For test_distiller: the same distillation on one device and on a 2-replica
`MirroredStrategy` over the two logical CPUs tests/conftest.py configures."""

import keras
import numpy as np
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.training import distribution_strategy

STEPS, GLOBAL_BATCH, SEQ = 4, 8, 12


def config(hidden_size, num_heads):
    return kbc.BertConfig(vocab_size=64, hidden_size=hidden_size, num_layers=1,
                          num_heads=num_heads, intermediate_size=32,
                          max_position_embeddings=SEQ, dropout=0.0, attention_dropout=0.0)


def data():
    """Rows of different lengths, labeled by their second token's parity: the replicas
    hold different numbers of real tokens, which the hidden-state and attention means
    must count over both."""
    rng = np.random.default_rng(0)
    count = GLOBAL_BATCH * STEPS
    ids = rng.integers(5, 64, size=(count, SEQ)).astype("int32")
    lengths = rng.integers(3, SEQ + 1, size=count)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype("int32")
    ids = ids * mask
    labels = (ids[:, 1] % 2).astype("int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    return tf.data.Dataset.from_tensor_slices((x, labels)).batch(GLOBAL_BATCH,
                                                                 drop_remainder=True)


def models():
    keras.utils.set_random_seed(7)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config(32, 4)), 2, dropout=0.0)
    student = kbc.BertClassifier(kbc.BertEncoder(config(16, 2)), 2, dropout=0.0)
    return teacher, student


def train(strategy, teacher_weights, student_weights, projection_weights):
    with strategy.scope():
        teacher, student = models()
        teacher.set_weights(teacher_weights)
        student.set_weights(student_weights)
        distiller = kbc.Distiller(teacher, student, temperature=2.0, alpha=0.5,
                                  hidden_weight=1.0, attention_weight=1.0)
        distiller.hidden_projection.set_weights(projection_weights)
        distiller.compile(optimizer=keras.optimizers.SGD(0.5))
    history = distiller.fit(data().repeat(), epochs=STEPS, steps_per_epoch=1, verbose=0)
    return history.history


def results(mirrored_strategy):
    teacher, student = models()
    projection = kbc.Distiller(teacher, student, hidden_weight=1.0).hidden_projection
    weights = teacher.get_weights(), student.get_weights(), projection.get_weights()
    single = train(distribution_strategy("one_device"), *weights)
    mirrored = train(mirrored_strategy, *weights)
    return {"replicas": mirrored_strategy.num_replicas_in_sync,
            "single": single, "mirrored": mirrored}
