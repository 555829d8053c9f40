"""What reading text costs a task model beyond its steps: a fine-tune of a few epochs with
validation, then `evaluate`, on raw text (MiniLM's WordPiece tokenizer, a tiny encoder),
in CPU seconds, and how many tf.data iterators Keras made for it.

Each iterator instantiates the preprocessing map function, tokenizer included. `--keras`
measures the pipeline as Keras reads a finite dataset (`read_with_one_iterator` off: two
iterators a pass); the default, the package's one iterator for the whole run. Each
variant runs in a new process, the two taking turns, round after round.

    python bench/iterator_start_up.py [--rounds 3] [--epochs 6]
"""

import argparse
import json
import os
import time

import common  # bench/common.py: this script runs from bench/


def measure(keras_reads, epochs):
    """Runs in the child process: prints one JSON line."""
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert_core as kbc
    from keras_bert_core.models import task

    if keras_reads:
        task.read_with_one_iterator = lambda dataset, *_: dataset
    made = [0]
    make = tf.data.Dataset.__iter__

    def counted(dataset):
        made[0] += 1
        return make(dataset)

    tf.data.Dataset.__iter__ = counted
    texts = common.load_corpus()[:256]
    labels = np.arange(len(texts)) % 2
    preprocessor = kbc.BertPreprocessor(common.default_vocab(), seq_length=64)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=64)
    keras.utils.set_random_seed(0)
    model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2,
                               preprocessor=preprocessor)
    start = time.process_time()
    model.fit(texts, labels, batch_size=32, epochs=epochs, verbose=0,
              validation_data=(texts[:64], labels[:64]))
    fitted = time.process_time()
    model.evaluate(texts[:64], labels[:64], verbose=0)
    print(json.dumps({"fit_cpu_s": fitted - start, "evaluate_cpu_s": time.process_time() - fitted,
                      "datasets_iterated": made[0]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--child", choices=["keras", "package"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return measure(args.child == "keras", args.epochs)
    results = common.results_in_turns(os.path.abspath(__file__), ("keras", "package"),
                                      args.rounds, ["--epochs", args.epochs])
    best = {variant: min(rows, key=lambda row: row["fit_cpu_s"])
            for variant, rows in results.items()}
    print(f"best of {args.rounds} rounds, {args.epochs} epochs, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| reading | fit CPU s | evaluate CPU s | datasets iterated |")
    print("|---|---:|---:|---:|")
    for variant, result in best.items():
        print(f"| {variant} | {result['fit_cpu_s']:.2f} | {result['evaluate_cpu_s']:.2f} | "
              f"{result['datasets_iterated']} |")


if __name__ == "__main__":
    main()
