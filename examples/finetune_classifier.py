"""Fine-tune BERT text classifiers, single texts and text pairs, with the Python API.

Two toy tasks are written as CSV files first, so the script runs anywhere; point
`load_text_classification` at your own CSV, TSV or JSON-lines files instead. Start from a
pretrained checkpoint with `--checkpoint` (a Hugging Face folder, a google-research or
Model Garden checkpoint, a .keras file, with its vocab.txt beside it); without one the
encoder starts from random weights.

    python examples/finetune_classifier.py
    python examples/finetune_classifier.py --checkpoint uncased_L-2_H-128_A-2/
    python examples/finetune_classifier.py --smoke   # seconds, for tests
"""

import argparse
import csv
import os
import random
import tempfile

from _setup import learning_rate  # examples/_setup.py

import keras_bert_core as kbc
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.tasks.classification import (
    answers,
    classification_dataset,
    load_text_classification,
)
from keras_bert_core.text import BertPreprocessor
from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab

GOOD = ["great", "wonderful", "superb", "lovely", "brilliant"]
BAD = ["awful", "boring", "dreadful", "dull", "terrible"]
THINGS = ["film", "plot", "cast", "music", "ending", "script"]


def write_toy_tasks(folder, rows, seed=0):
    """sentiment.csv (text -> positive/negative) and paraphrase.csv (two texts -> same?)."""
    rng = random.Random(seed)
    with open(os.path.join(folder, "sentiment.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for _ in range(rows):
            label = rng.choice(["positive", "negative"])
            words = GOOD if label == "positive" else BAD
            writer.writerow([f"The {rng.choice(THINGS)} was {rng.choice(words)}.", label])
    with open(os.path.join(folder, "paraphrase.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "text_b", "label"])
        for _ in range(rows):
            thing, other = rng.sample(THINGS, 2)
            same = rng.random() < 0.5
            writer.writerow([f"I liked the {thing}.", f"The {thing if same else other} "
                             f"was {rng.choice(GOOD)}.", int(same)])


def train_and_evaluate(path, encoder, preprocessor, pair_column, epochs, rate, batch_size=16):
    train = load_text_classification(path, pair_column=pair_column)
    model = BertClassifier(encoder, num_classes=len(train.label_names))
    steps = epochs * (len(train) // batch_size)
    model.compile(optimizer=create_optimizer(rate, steps, steps // 10))
    model.fit(classification_dataset(train, preprocessor, batch_size, training=True, seed=1),
              epochs=epochs, verbose=2)
    # In-sample here for brevity; score a held-out file the same way.
    _, accuracy = model.evaluate(classification_dataset(train, preprocessor, batch_size),
                                 verbose=0)
    return model, train.label_names, accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--smoke", action="store_true", help="a few steps on tiny data")
    args = parser.parse_args()
    rows, epochs = (64, 1) if args.smoke else (512, 4)
    folder = tempfile.mkdtemp()
    write_toy_tasks(folder, rows)

    if args.checkpoint:
        encoder, config = kbc.load_checkpoint(args.checkpoint)
        folder_of = args.checkpoint if os.path.isdir(args.checkpoint) else os.path.dirname(
            args.checkpoint)
        vocab = os.path.join(folder_of, "vocab.txt")
    else:
        vocab = learn_wordpiece_vocab([os.path.join(folder, "sentiment.csv"),
                                       os.path.join(folder, "paraphrase.csv")], vocab_size=200)
        encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
    preprocessor = BertPreprocessor(vocab, seq_length=32)

    # Single texts: one segment per row.
    model, labels, accuracy = train_and_evaluate(
        os.path.join(folder, "sentiment.csv"), encoder, preprocessor, None, epochs,
        learning_rate(args.checkpoint))
    print(f"sentiment accuracy {accuracy:.2f}")
    logits = model.predict(preprocessor(["The music was superb.", "The plot was dull."]),
                           verbose=0)
    # Label names and probabilities, as `kbc predict` prints them.
    print("predictions:", answers(logits, labels, decimals=3))

    # Pairs: the preprocessor packs (a, b) as [CLS] a [SEP] b [SEP], segment ids 0 then 1.
    # (The same encoder object continues from the sentiment fine-tuning here.)
    model, labels, accuracy = train_and_evaluate(
        os.path.join(folder, "paraphrase.csv"), encoder, preprocessor, "text_b", epochs,
        learning_rate(args.checkpoint))
    print(f"paraphrase accuracy {accuracy:.2f}")
    logits = model.predict(preprocessor((["I liked the cast."], ["The cast was lovely."])),
                           verbose=0)
    print("pair prediction:", answers(logits, labels)[0]["label"])


if __name__ == "__main__":
    main()
