"""For test_raw_text: `fit` on raw text on one device and on a 2-replica `MirroredStrategy`
over the two logical CPUs tests/conftest.py configures."""

import keras
import numpy as np
import tensorflow as tf

import keras_bert_core as kbc

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "a", "very"]
TEXTS = ["a good film", "a bad film", "very good", "very bad", "good", "bad", "a film",
         "a very good film"] * 2
LABELS = np.array([1, 0, 1, 0, 1, 0, 0, 1] * 2, "int32")


def losses(strategy):
    keras.utils.set_random_seed(0)
    with strategy.scope():
        preprocessor = kbc.BertPreprocessor(VOCAB, seq_length=8)
        encoder = kbc.BertEncoder(kbc.BertConfig.preset(
            "tiny", vocab_size=len(VOCAB), num_layers=1, max_position_embeddings=8,
            dropout=0.0, attention_dropout=0.0))
        model = kbc.BertClassifier(encoder, 2, dropout=0.0, preprocessor=preprocessor)
    history = model.fit(TEXTS, LABELS, batch_size=8, epochs=3, shuffle=False, verbose=0)
    return history.history["loss"]


def results(mirrored):
    return {"single": losses(tf.distribute.get_strategy()), "mirrored": losses(mirrored),
            "replicas": mirrored.num_replicas_in_sync}
