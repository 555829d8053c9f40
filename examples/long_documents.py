"""Documents longer than the model's window: classified whole, in Keras and in a SavedModel.

`kbc.LongTextPreprocessor` cuts each text into overlapping windows of `seq_length`
wordpieces inside the graph; `BertClassifier(window_aggregation=...)` runs every window
and joins their logits (mean, max, or attention-weighted), so a document trains with its
one label and the export takes one long raw text. The defaults make documents whose
label hangs on a few words placed anywhere in them; pass `--checkpoint` for real weights.
The same from the command line: `kbc finetune --task classify --long-texts windows
--stride 64 --max-windows 16 --window-aggregation attention ...` (also `multilabel`;
`ner` tags each word from the window where it sits most centrally).

    python examples/long_documents.py
    python examples/long_documents.py --smoke   # seconds, for tests
"""

import argparse
import os
import pathlib
import random
import tempfile

import numpy as np
import tensorflow as tf
from _setup import encoder_and_vocab, learning_rate  # examples/_setup.py

import keras_bert_core as kbc

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "text" / "data" / "tasks"
FILLER = "the river flows through the field and the sky shone over the sea".split()
CUES = {"positive": "superb great warm funny", "negative": "drags not worth naive"}


def documents(count, seed):
    """Long texts of filler words with their label's cue words somewhere inside."""
    rng = random.Random(seed)
    texts, labels = [], []
    for index in range(count):
        label = index % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(40, 120))]
        at = rng.randint(0, len(words))
        words[at:at] = CUES[("negative", "positive")[label]].split()
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--vocab", default=str(DATA / "vocab.txt"))
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--aggregation", default="attention", choices=("mean", "max",
                                                                         "attention"))
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()

    encoder, vocab = encoder_and_vocab(args.checkpoint, args.vocab)
    preprocessor = kbc.LongTextPreprocessor(vocab, seq_length=args.seq_length,
                                            stride=args.seq_length // 2, max_windows=16)
    model = kbc.BertClassifier(encoder, num_classes=2, window_aggregation=args.aggregation,
                               preprocessor=preprocessor)
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate(args.checkpoint)))
    texts, labels = documents(64, seed=0)
    model.fit(texts, labels, batch_size=8, epochs=1 if args.smoke else args.epochs, verbose=2)

    held_out, truth = documents(8, seed=1)
    predicted = model.predict(held_out, verbose=0).argmax(-1)
    print(f"held-out accuracy {np.mean(predicted == truth):.2f}")

    path = kbc.export_saved_model(model, preprocessor, os.path.join(tempfile.mkdtemp(), "docs"),
                                  label_names=["negative", "positive"], warmup=False)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    text = held_out[0]
    windows = int((preprocessor([text])["padding_mask"].numpy()[0, :, 0] > 0).sum())
    served = serve(text=tf.constant([text]))["label_name"].numpy()[0].decode()
    print(f"a text of {len(text.split())} words, {windows} windows: Keras says "
          f"{('negative', 'positive')[predicted[0]]}, the SavedModel says {served}")


if __name__ == "__main__":
    main()
