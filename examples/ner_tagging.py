"""Named-entity tagging (CoNLL format) with the Python API.

Reads a CoNLL file (a word per line, its tag in the last column, blank lines between
sentences), labels the first wordpiece of every word, trains a token classifier, maps its
predictions back to one tag per word and scores whole entities as conlleval does. The
defaults use the tiny file in tests/; pass your own `--train`, `--dev` and `--checkpoint`.

    python examples/ner_tagging.py
    python examples/ner_tagging.py --checkpoint cased_L-4_H-256_A-4/ --cased \\
        --train eng.train --dev eng.testa
    python examples/ner_tagging.py --smoke   # seconds, for tests
"""

import argparse
import pathlib

from _setup import encoder_and_vocab, learning_rate  # examples/_setup.py

from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.tasks.token_classification import (
    entity_scores,
    load_conll,
    predictions_to_tags,
    tagging_features,
)
from keras_bert_core.text import BertTokenizer

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "text" / "data" / "tasks"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(DATA / "ner.conll"))
    parser.add_argument("--dev", default=str(DATA / "ner.conll"))
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--vocab", default=str(DATA / "vocab.txt"))
    parser.add_argument("--cased", action="store_true", help="a cased vocabulary")
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()
    epochs, batch_size = (1 if args.smoke else args.epochs), 2

    encoder, vocab = encoder_and_vocab(args.checkpoint, args.vocab)
    tokenizer = BertTokenizer(vocab, lower_case=not args.cased)

    train = load_conll(args.train)
    dev = load_conll(args.dev, tag_names=train.tag_names)  # the training ids for each tag
    print(f"{len(train)} sentences, tags {train.tag_names}")
    train_features = tagging_features(train, tokenizer, seq_length=args.seq_length)

    model = BertTokenClassifier(encoder, num_classes=len(train.tag_names))
    steps = epochs * (len(train_features) // batch_size)
    model.compile(optimizer=create_optimizer(learning_rate(args.checkpoint), steps, steps // 10))
    model.fit(train_features.dataset(batch_size, training=True, seed=1), epochs=epochs,
              verbose=2)

    dev_features = tagging_features(dev, tokenizer, seq_length=args.seq_length)
    predicted = predictions_to_tags(model.predict(dev_features.inputs, verbose=0),
                                    dev_features, train.tag_names)
    truth = [[train.tag_names[t] for t in sentence] for sentence in dev.tags]
    print(list(zip(dev.sentences[0], predicted[0], strict=True)))
    scores = entity_scores(truth, predicted)
    print(f"entity precision {scores['precision']:.2f} recall {scores['recall']:.2f} "
          f"F1 {scores['f1']:.2f}")


if __name__ == "__main__":
    main()
