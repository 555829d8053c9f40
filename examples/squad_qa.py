"""Extractive question answering (SQuAD format) with the Python API.

Reads a SQuAD v1.1 / v2.0 JSON file, cuts long contexts into overlapping windows, trains a
span labeler, turns its start/end logits back into answer text cut from the original
context, and scores it with SQuAD's exact match and F1. The defaults use the tiny files in
tests/ so that the script runs anywhere; pass your own `--train`, `--dev` and
`--checkpoint` (a pretrained BERT, vocab.txt beside it) for real results.

    python examples/squad_qa.py
    python examples/squad_qa.py --checkpoint uncased_L-4_H-256_A-4/ \\
        --train train-v1.1.json --dev dev-v1.1.json --seq-length 384 --epochs 2
    python examples/squad_qa.py --smoke   # seconds, for tests
"""

import argparse
import pathlib

from _setup import encoder_and_vocab, learning_rate  # examples/_setup.py

from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.tasks.question_answering import (
    answers,
    load_squad,
    squad_features,
    squad_metrics,
)
from keras_bert_core.text import BertTokenizer

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "text" / "data" / "tasks"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(DATA / "squad_v1.json"))
    parser.add_argument("--dev", default=str(DATA / "squad_v1.json"))
    parser.add_argument("--checkpoint", help="pretrained weights, vocab.txt beside them")
    parser.add_argument("--vocab", default=str(DATA / "vocab.txt"))
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()
    epochs, batch_size = (1 if args.smoke else args.epochs), 4

    encoder, vocab = encoder_and_vocab(args.checkpoint, args.vocab)
    tokenizer = BertTokenizer(vocab, lower_case=True)

    # Windows of [CLS] question [SEP] context-slice [SEP], labeled with the answer's tokens.
    train = load_squad(args.train)
    train_features = squad_features(train, tokenizer, max_seq_length=args.seq_length,
                                     doc_stride=16, max_query_length=16)
    print(f"{len(train)} questions -> {len(train_features)} windows")

    model = BertSpanLabeler(encoder)
    steps = epochs * (len(train_features) // batch_size)
    model.compile(optimizer=create_optimizer(learning_rate(args.checkpoint), steps, steps // 10))
    model.fit(train_features.dataset(batch_size, training=True, seed=1), epochs=epochs,
              verbose=2)

    dev = load_squad(args.dev)
    dev_features = squad_features(dev, tokenizer, max_seq_length=args.seq_length,
                                  doc_stride=16, max_query_length=16)
    logits = model.predict(dev_features.inputs, verbose=0)
    # SQuAD 2.0 (unanswerable questions): pass null_score_threshold=0.0.
    # Answer text cut from the context, with its character offsets.
    predicted = answers(dev, dev_features, logits["start_logits"], logits["end_logits"])
    for answer, example in zip(predicted[:3], dev, strict=False):
        print(f"{answer['question']!r} -> {answer['answer']!r} at characters "
              f"{answer['answer_start']}:{answer['answer_end']} (gold {example.answers[0]!r})")
    print(squad_metrics({answer["id"]: answer["answer"] for answer in predicted}, dev))


if __name__ == "__main__":
    main()
