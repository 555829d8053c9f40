"""Multiple choice (SWAG-like: pick the right continuation) with the Python API.

Reads JSON lines `{"question": ..., "choices": [...], "label": i}` (with an optional
passage, here `context`), packs every (question, choice) pair into its own row and trains
`BertMultipleChoice`, which scores each row and takes a softmax across the choices. The
defaults use the tiny file in tests/; pass your own `--train`, `--dev` and `--checkpoint`.

    python examples/multiple_choice.py
    python examples/multiple_choice.py --smoke   # seconds, for tests
"""

import argparse
import pathlib

import numpy as np
from _setup import encoder_and_vocab, learning_rate  # examples/_setup.py

from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.tasks.multiple_choice import load_multiple_choice, multiple_choice_dataset
from keras_bert_core.text import BertPreprocessor

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "text" / "data" / "tasks"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(DATA / "choices.jsonl"))
    parser.add_argument("--dev", default=str(DATA / "choices.jsonl"))
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--vocab", default=str(DATA / "vocab.txt"))
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()
    epochs, batch_size = (1 if args.smoke else args.epochs), 1

    encoder, vocab = encoder_and_vocab(args.checkpoint, args.vocab)
    preprocessor = BertPreprocessor(vocab, seq_length=32)

    # With a passage, each row is (context, question + " " + choice).
    train = load_multiple_choice(args.train, context_column="context")
    model = BertMultipleChoice(encoder, num_choices=train.num_choices)
    steps = epochs * (len(train) // batch_size)
    model.compile(optimizer=create_optimizer(learning_rate(args.checkpoint), steps, steps // 10))
    model.fit(multiple_choice_dataset(train, preprocessor, batch_size, training=True, seed=1),
              epochs=epochs, verbose=2)

    dev = load_multiple_choice(args.dev, context_column="context")
    logits = model.predict(multiple_choice_dataset(dev, preprocessor, batch_size=8), verbose=0)
    for question, choices, scores in zip(dev.questions, dev.choices, logits, strict=True):
        print(f"{question!r}: {choices[int(np.argmax(scores))]!r}")
    print(f"accuracy {np.mean(logits.argmax(-1) == dev.labels):.2f}")


if __name__ == "__main__":
    main()
