"""ModernBERT's hub-layout tokenizer: what its NFC and added-token steps cost in the graph.

Three tokenizers on the same corpus (tests/text/data/tokenizer_corpus.jsonl), all with the
vocabulary and merges of the hub-layout fixture (tests/checkpoints/data/modernbert/
hub_tokenizer, make_modernbert_hub_tokenizer.py): `BytePairTokenizer` as `tokenizer.json`
sets it up (NFC, 26 added tokens found in text), the same without those two steps (RoBERTa's
pipeline), and Hugging Face `tokenizers` on the file (`encode_batch`, special tokens read as
text), after checking how many lines the first and the third give the same ids. CPU time
(process_time, all threads) per pass over the corpus, batches of
`--batch-size` in a tf.function; one warm-up pass each, then the tokenizers take turns, one
pass each per round; the median of the rounds. Writes bench/results/modernbert_tokenizer.json
and prints a markdown table.

    python bench/modernbert_tokenizer.py [--rounds 5] [--batch-size 256]
"""

import argparse
import json
import os
import pathlib
import time

import common  # bench/common.py: this script runs from bench/
import tensorflow as tf
import tokenizers

from keras_bert_core.text import BertPreprocessor, BytePairTokenizer

REPO = pathlib.Path(__file__).resolve().parents[1]
HUB = REPO / "tests" / "checkpoints" / "data" / "modernbert" / "hub_tokenizer"
RESULTS = REPO / "bench" / "results" / "modernbert_tokenizer.json"


def tf_pass(tokenizer, lines, batch_size):
    tokenize = tf.function(tokenizer.call)
    batches = [tf.constant(lines[i:i + batch_size]) for i in range(0, len(lines), batch_size)]

    def run(_):
        for batch in batches:
            tokenize(batch).flat_values.numpy()  # fetched, as a caller would

    return run


def cpu_seconds(run):
    def measure(argument):
        start = time.process_time()
        run(argument)
        return time.process_time() - start
    return measure


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    lines = common.load_corpus()
    hub = BertPreprocessor(str(HUB), seq_length=8).tokenizer
    plain = BytePairTokenizer(hub.vocabulary, hub.merges)
    reference = tokenizers.Tokenizer.from_file(str(HUB / "tokenizer.json"))
    reference.encode_special_tokens = True
    batches = [lines[i:i + args.batch_size] for i in range(0, len(lines), args.batch_size)]
    measures = {
        "BytePairTokenizer, hub layout (NFC, added tokens)": tf_pass(hub, lines,
                                                                      args.batch_size),
        "BytePairTokenizer, BPE alone (RoBERTa's pipeline)": tf_pass(plain, lines,
                                                                      args.batch_size),
        f"HF tokenizers {tokenizers.__version__} encode_batch": lambda _: [
            reference.encode_batch(batch, add_special_tokens=False) for batch in batches],
    }
    ours = hub(tf.constant(lines)).to_list()
    theirs = [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
    identical = sum(a == b for a, b in zip(ours, theirs, strict=True)) / len(lines)
    medians = common.medians_in_turns({name: cpu_seconds(run) for name, run in
                                       measures.items()}, list(range(args.rounds)))
    rows = [{"tokenizer": name, "cpu_seconds": round(seconds, 3),
             "lines_per_cpu_second": round(len(lines) / seconds)}
            for name, seconds in medians.items()]
    results = {"corpus_lines": len(lines), "identical_ids": identical,
               "batch_size": args.batch_size,
               "rounds": args.rounds, "machine": common.machine_info(),
               "tensorflow": tf.__version__, "results": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{len(lines)} lines ({identical:.4f} with HF's ids), batch {args.batch_size}, "
          f"median of {args.rounds} rounds, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    print("| tokenizer | CPU s / pass | lines per CPU second |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row['tokenizer']} | {row['cpu_seconds']:.2f} | "
              f"{row['lines_per_cpu_second']:,} |")


if __name__ == "__main__":
    main()
