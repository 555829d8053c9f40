"""What Keras's saving costs beyond the bytes: `save_weights` (a `kbc` backup or checkpoint),
`save` and `load_model` of a classifier with its preprocessor, in CPU seconds, with Keras's
own attribute skip-sets (rebuilt for every object it walks) and with the package's cache of
them (`keras_internals.cache_saving_skipsets`). Each variant runs in a new process, the two
taking turns, round after round; the best round of each is printed.

    python bench/keras_saving.py [--rounds 3] [--preset tiny] [--repeats 5]
"""

import argparse
import json
import os
import tempfile
import time

import common  # bench/common.py: this script runs from bench/


def measure(cached, preset, repeats):
    """Runs in the child process: prints one JSON line of mean CPU seconds per call."""
    import keras
    from keras.src.saving import saving_lib

    import keras_bert_core as kbc

    if not cached:  # importing the package cached them: put Keras's own function back
        saving_lib.get_attr_skipset = saving_lib.get_attr_skipset.__wrapped__
    preprocessor = kbc.BertPreprocessor(common.default_vocab(), seq_length=64)
    config = kbc.BertConfig.preset(preset, vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=64)
    model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2,
                               preprocessor=preprocessor)
    model.compile(optimizer=kbc.BertAdamW(1e-4))
    model.fit(["a text", "another text"], [0, 1], verbose=0)  # the optimizer's slots too
    with tempfile.TemporaryDirectory() as folder:
        def path(i, suffix):
            return os.path.join(folder, f"{i}{suffix}")

        calls = {
            "save_weights": lambda i: model.save_weights(path(i, ".weights.h5")),
            "save": lambda i: model.save(path(i, ".keras")),
            "load_model": lambda i: keras.saving.load_model(path(i, ".keras")),
        }
        result = {}
        for name, call in calls.items():
            call(-1)  # a first call of each, outside the timing
            start = time.process_time()
            for i in range(repeats):
                call(i)
            result[name] = (time.process_time() - start) / repeats
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="tiny", help="a BertConfig preset (tiny, base...)")
    parser.add_argument("--repeats", type=int, default=5, help="calls timed per round")
    parser.add_argument("--child", choices=["keras", "package"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return measure(args.child == "package", args.preset, args.repeats)
    results = common.results_in_turns(os.path.abspath(__file__), ("keras", "package"),
                                      args.rounds,
                                      ["--preset", args.preset, "--repeats", args.repeats])
    best = {variant: {name: min(row[name] for row in rows) for name in rows[0]}
            for variant, rows in results.items()}
    print(f"{args.preset} classifier with its preprocessor, best of {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    calls = list(best["keras"])
    print("| skip-sets | " + " | ".join(f"{call} CPU s" for call in calls) + " |")
    print("|---|" + "---:|" * len(calls))
    for variant, result in best.items():
        print(f"| {variant} | " + " | ".join(f"{result[call]:.3f}" for call in calls) + " |")


if __name__ == "__main__":
    main()
