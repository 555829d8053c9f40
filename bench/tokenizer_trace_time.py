"""Tokenizer start-up cost: seconds to trace a preprocessor in a `tf.function` and to run it
the first time (what every `fit`, `predict`, `tf.data` map and export pays once), and its
throughput after that, for each tokenizer algorithm.

Each measurement runs in a new process (a process that traced once traces faster); the
algorithms take turns, round after round, and the table keeps each one's best round.
`--repo DIR` measures the package in another checkout (e.g. a `git worktree` of an older
commit), so two versions can take turns on the same machine.

    python bench/tokenizer_trace_time.py [--rounds 3] [--repo DIR ...]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import common  # bench/common.py: this script runs from bench/

FAMILIES = os.path.join(common.REPO, "tests", "checkpoints", "data", "families")
# The tokenizer folders measured: WordPiece (MiniLM's 30,522 tokens), byte-level BPE and
# SentencePiece (the family fixtures).
TOKENIZERS = {"wordpiece": None, "byte_pair": os.path.join(FAMILIES, "roberta"),
              "sentencepiece": os.path.join(FAMILIES, "albert")}


def measure(folder, batch_size):
    """Runs in the child process: prints one JSON line of seconds and lines/s."""
    import tensorflow as tf

    from keras_bert_core.text import BertPreprocessor

    lines = common.load_corpus()
    batches = [tf.constant(lines[i:i + batch_size]) for i in range(0, len(lines), batch_size)]
    preprocessor = BertPreprocessor(folder, seq_length=128)
    preprocess = tf.function(preprocessor)
    start = time.perf_counter()
    preprocess.get_concrete_function(tf.TensorSpec([None], tf.string))
    traced = time.perf_counter()
    preprocess(batches[0])["token_ids"].numpy()
    first_call = time.perf_counter()
    for batch in batches:
        preprocess(batch)["token_ids"].numpy()
    steady = time.perf_counter() - first_call
    print(json.dumps({"trace_s": traced - start, "first_call_s": first_call - traced,
                      "lines_per_second": len(lines) / steady}))


def run_child(repo, folder, batch_size):
    env = {**os.environ, "PYTHONPATH": repo, "TF_CPP_MIN_LOG_LEVEL": "2",
           "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, __file__, "--child", folder, "--batch-size", str(batch_size)],
        env=env, capture_output=True, text=True, check=True, cwd=os.path.dirname(__file__))
    return json.loads(result.stdout.strip().splitlines()[-1])


def start_up(result):
    return result["trace_s"] + result["first_call_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repo", action="append", help="checkouts to measure (default: this one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return measure(args.child, args.batch_size)

    folders = {name: folder or common.default_vocab() for name, folder in TOKENIZERS.items()}
    repos = args.repo or [common.REPO]
    best = {}
    for _ in range(args.rounds):
        for name, folder in folders.items():
            for repo in repos:
                result = run_child(repo, folder, args.batch_size)
                kept = best.setdefault((name, repo), result)
                if start_up(result) < start_up(kept):
                    best[(name, repo)] = result
    print(f"best of {args.rounds} rounds, batch {args.batch_size}, {os.cpu_count()} CPU cores, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| tokenizer | checkout | trace s | first call s | lines/s after |")
    print("|---|---|---:|---:|---:|")
    for (name, repo), result in best.items():
        print(f"| {name} | {repo} | {result['trace_s']:.1f} | {result['first_call_s']:.1f} | "
              f"{result['lines_per_second']:,.0f} |")


if __name__ == "__main__":
    main()
