"""Tokenizer throughput: BertTokenizer (batched, in a tf.function) vs Hugging Face `tokenizers`.

All tokenizers run in one process on the same corpus (tests/text/data/tokenizer_corpus.jsonl)
and the same vocabulary (all-MiniLM-L6-v2's vocab.txt by default). Each figure is the median
of several passes over the whole corpus, after one warm-up pass; the tokenizers take turns,
one pass each per round, so that a change in the shared machine's speed reaches them alike.
Writes bench/results/tokenizer.json and prints a markdown table.

    python bench/tokenizer_throughput.py [--vocab vocab.txt] [--batch-size 256] [--repeats 5]
"""

import argparse
import json
import os
import pathlib
import platform

import common  # bench/common.py: this script runs from bench/
import tensorflow as tf
import tokenizers
from tokenizers import BertWordPieceTokenizer

from keras_bert_core.text import BertTokenizer

REPO = pathlib.Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "tokenizer.json"


def tf_runner(tokenizer, lines, batch_size):
    tokenize = tf.function(tokenizer.call)
    batches = [tf.constant(lines[i : i + batch_size]) for i in range(0, len(lines), batch_size)]

    def run():
        for batch in batches:
            # Fetch the result, as a caller would.
            tokenize(batch).flat_values.numpy()

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default=None)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    vocab = str(args.vocab or common.default_vocab())
    lines = common.load_corpus()
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    hf = BertWordPieceTokenizer(vocab, lowercase=True)
    runners = {
        "keras_bert_core BertTokenizer (TF, reference pipeline)": tf_runner(
            BertTokenizer(vocab), lines, args.batch_size
        ),
        "keras_bert_core BertTokenizer (TF, tflite_compatible)": tf_runner(
            BertTokenizer(vocab, tflite_compatible=True), lines, args.batch_size
        ),
        f"HF tokenizers {tokenizers.__version__} encode_batch": lambda: [
            hf.encode_batch(lines[i : i + args.batch_size], add_special_tokens=False)
            for i in range(0, len(lines), args.batch_size)
        ],
    }
    rows = []
    passes = {name: lambda _, run=run: run() for name, run in runners.items()}
    for name, seconds in common.median_seconds_in_turns(passes, range(args.repeats)).items():
        rows.append(
            {
                "tokenizer": name,
                "seconds": round(seconds, 4),
                "lines_per_second": round(len(lines) / seconds),
                "megabytes_per_second": round(megabytes / seconds, 3),
            }
        )

    results = {
        "corpus": {"path": os.path.relpath(common.TOKENIZER_CORPUS, REPO), "lines": len(lines),
                   "megabytes": round(megabytes, 3)},
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "machine": {"cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                    "python": platform.python_version(), "tensorflow": tf.__version__},
        "results": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")

    print(f"{len(lines)} lines, {megabytes:.3f} MB, batch {args.batch_size}, "
          f"median of {args.repeats}, {os.cpu_count()} CPU cores, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| tokenizer | lines/s | MB/s |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row['tokenizer']} | {row['lines_per_second']:,} | "
              f"{row['megabytes_per_second']:.2f} |")
    print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
