"""Multi-label classification: any number of labels per text, thresholds tuned on
validation data, label sets answered by Keras and by the raw-text SavedModel alike.

A toy task is written first (product reviews tagged with what they mention: price,
battery, screen; a review may mention none or all), so the script runs anywhere; point
`task.load` at your own CSV/TSV (labels joined by a delimiter) or JSON lines (a list
of labels). The command line does the same:

    kbc finetune --task multilabel --train train.csv --validation dev.csv \\
        --label-delimiter "|" --checkpoint all-MiniLM-L6-v2/ --run-dir runs/tags
    kbc evaluate runs/tags test.csv      # micro / macro F1, each label's precision, recall
    kbc predict runs/tags --input texts.txt

    python examples/multilabel_topics.py
    python examples/multilabel_topics.py --checkpoint uncased_L-2_H-128_A-2/
    python examples/multilabel_topics.py --smoke   # seconds, for tests
"""

import argparse
import csv
import os
import random
import tempfile

import tensorflow as tf
from _setup import learning_rate  # examples/_setup.py

import keras_bert_core as kbc
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.tasks.multilabel.fine_tuning import MultiLabel
from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab

MENTIONS = {"price": ["cheap", "pricey", "a bargain"], "battery": ["lasts all day", "drains fast"],
            "screen": ["bright display", "dim screen"]}
FILLER = ["I bought it", "my phone", "works well", "arrived late", "nice box", "for my son"]


def write_reviews(path, rows, seed):
    """Reviews that mention 0-3 aspects; the labels are the aspects, joined by "|"."""
    rng = random.Random(seed)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for _ in range(rows):
            aspects = [a for a in MENTIONS if rng.random() < 0.4]
            parts = rng.sample(FILLER, 2) + [rng.choice(MENTIONS[a]) for a in aspects]
            rng.shuffle(parts)
            writer.writerow([", ".join(parts) + ".", "|".join(aspects)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--smoke", action="store_true", help="a few steps on tiny data")
    args = parser.parse_args()
    rows, epochs = (64, 2) if args.smoke else (768, 6)
    folder = tempfile.mkdtemp()
    paths = {name: os.path.join(folder, f"{name}.csv") for name in ("train", "dev", "test")}
    for seed, path in enumerate(paths.values()):
        write_reviews(path, rows if seed == 0 else rows // 4, seed)

    if args.checkpoint:
        encoder, _ = kbc.load_checkpoint(args.checkpoint)
        checkpoint_folder = (args.checkpoint if os.path.isdir(args.checkpoint)
                             else os.path.dirname(args.checkpoint))
        vocab = os.path.join(checkpoint_folder, "vocab.txt")
    else:
        vocab = learn_wordpiece_vocab([paths["train"]], vocab_size=200)
        encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
    preprocessor = kbc.BertPreprocessor(vocab, seq_length=32)

    # The task reads the files, builds the model (sigmoid per label, binary cross-entropy)
    # and carries the label names in the model, as `kbc finetune --task multilabel` does.
    task = MultiLabel({"label_delimiter": "|", "seq_length": 32, "lower_case": True})
    train = task.load(paths["train"])
    task.learn_labels(train)
    dev, test = task.load(paths["dev"]), task.load(paths["test"])
    model = task.build_model(encoder, preprocessor)
    dataset, count = task.dataset(train, preprocessor, batch_size=16, training=True, seed=1)
    steps = epochs * (count // 16)
    model.compile(optimizer=create_optimizer(learning_rate(args.checkpoint), steps, steps // 10))
    model.fit(dataset, epochs=epochs, verbose=2)

    task.tune(model, dev)  # each label's threshold: the one with the best F1 on dev
    print("thresholds:", dict(zip(train.label_names, model.thresholds, strict=True)))
    scores = task.evaluate(model, test)
    print(f"test micro-F1 {scores['micro_f1']:.2f}, macro-F1 {scores['macro_f1']:.2f}")

    texts = ["Cheap, and the battery lasts all day.", "Nice box."]
    answers = task.predict(model, task.from_lines(texts))
    print("answers:", [answer["labels"] for answer in answers])
    # The SavedModel takes raw text and applies the same thresholds in its graph.
    export = kbc.export_saved_model(model, preprocessor, os.path.join(folder, "saved_model"),
                                    label_names=train.label_names, warmup=False)
    served = tf.saved_model.load(export).signatures["serving_default"](text=tf.constant(texts))
    same = [sorted(n.decode() for n in row if n) for row in served["label_names"].numpy()] == [
        sorted(answer["labels"]) for answer in answers]
    print(f"SavedModel answers the same label sets: {same}")


if __name__ == "__main__":
    main()
