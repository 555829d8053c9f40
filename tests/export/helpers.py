"""Constants and helpers of the export tests (fixtures are in conftest.py), and the varied
English texts of the parity checks (bench/export_latency.py uses them too).

The texts are ASCII only, so the reference tokenizer and the TFLite-compatible one agree on
every text (they differ on compatibility characters such as `²` or full-width forms).
"""

import pathlib
import random

import keras
from keras import ops

from keras_bert_core.models.encoder import encoder_inputs

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEQ_LENGTH = 64
LABEL_NAMES = ["has_digit", "question", "other"]
TAG_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG"]
NUM_CHOICES = 3


def keras_probabilities(model, preprocessor, texts):
    """The Keras model's class probabilities, on the serving padding (longest in batch)."""
    logits = model(preprocessor(texts, static_shape=False), training=False)
    return ops.convert_to_numpy(ops.softmax(logits))


def bag_of_words_model(vocab_size, num_outputs=2):
    """A small functional model on the encoder inputs (not a package model): fast to export."""
    inputs = encoder_inputs()
    vectors = keras.layers.Embedding(vocab_size, 8)(inputs["token_ids"])
    real = ops.expand_dims(ops.cast(inputs["padding_mask"], "float32"), 2)
    mean = ops.sum(vectors * real, axis=1) / ops.sum(real, axis=1)
    return keras.Model(inputs, keras.layers.Dense(num_outputs)(mean), name="bag_of_words")


_SUBJECTS = ["The committee", "My neighbor", "A small startup", "Dr. Smith", "The old bridge",
             "Our team", "The weather service", "Anna's cat", "The city council", "Every student"]
_VERBS = ["approved", "questioned", "built", "rejected", "described", "sold", "repaired",
          "announced", "ignored", "celebrated"]
_OBJECTS = ["the new budget", "a wooden boat", "the quarterly report", "three old houses",
            "the results", "an unusual plan", "the museum's collection", "their first product",
            "a long-awaited update", "the road to the airport"]
_TAILS = ["after a long debate", "in the morning", "without any warning", "for the third time",
          "despite the rain", "on Tuesday", "at the last minute", "with great care",
          "(as expected)", "- surprisingly - before noon"]
_NUMBERS = ["42", "3.14", "1999", "$12.50", "15%", "7,500", "2nd", "No. 9", "10:30", "0"]


def varied_texts(count=200, seed=0):
    """`count` sentences of 1 to ~150 words: questions, exclamations, digits, punctuation.

    Example:
    >>> len(varied_texts(5)), all(t.isascii() for t in varied_texts(5))
    (5, True)
    """
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        kind = i % 5
        if kind == 0:  # a single word or a short fragment
            texts.append(rng.choice(_OBJECTS).split()[-1] + rng.choice(["", ".", "!", "?"]))
            continue
        clauses = [f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
                   for _ in range(1 + (kind == 4) * rng.randint(5, 20))]
        text = ", and ".join(clauses)
        if kind in (1, 3):
            text += f" {rng.choice(_TAILS)}"
        if kind == 2:
            text += f" for {rng.choice(_NUMBERS)} dollars"
        if kind == 3 and rng.random() < 0.5:
            text = f'"{text}," she said'
        texts.append(text + rng.choice([".", "!", "?", "..."]))
    return texts


def rule_label(text):
    """A learnable label: 0 if the text holds a digit, else 1 for a question, else 2."""
    if any(c.isdigit() for c in text):
        return 0
    return 1 if text.rstrip().endswith("?") else 2
