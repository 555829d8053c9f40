"""What converting a model to TFLite costs by the converter's two routes.

    python bench/tflite_conversion.py --rounds 5

`export_tflite` hands TensorFlow's converter the serving function (`from_concrete_functions`
with its module): the converter saves a SavedModel and loads it back once. The other route,
a SavedModel folder (`from_saved_model`), loads the folder to find the signature, loads it
again as it converts, and then runs a full garbage collection of the whole process, whose
cost grows with everything the process holds (a notebook or a test session that has built
models holds millions of objects). `export_tflite` takes that route only for a signature
that must keep a name other than `serving_default` (`inputs="ids"`).

Each round converts a tiny `BertClassifier` behind its TFLite-compatible WordPiece
preprocessor (text in, float32) by each route, taking turns in one process, first as the
process is, then with `--live-objects` more objects alive (lists, which the collector
scans). Reports the process's CPU seconds per conversion, median and best, and how many
bytes of the two files differ (the conversion metadata names the source: a function or a
SavedModel), and writes bench/results/tflite_conversion.json (or `--out`).
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def serving_function():
    """A tiny classifier's TFLite serving module and its `serving_default` function."""
    import keras_bert_core as kbc
    from keras_bert_core.export.saved_model import serving_module
    from keras_bert_core.models.classifier import BertClassifier
    from keras_bert_core.tasks.serving_dispatch import serving_task
    from keras_bert_core.text.preprocessor import BertPreprocessor

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "."]
    preprocessor = BertPreprocessor(vocab, seq_length=16).with_options(tflite_compatible=True)
    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=len(vocab), max_position_embeddings=16)), num_classes=2)
    task = serving_task(model, preprocessor, False, None, 30, None)
    return serving_module(model, preprocessor, task, signatures=("serving_default",),
                          static_shape=False, text_outputs=False)


def convert(route, module, concrete):
    """The `.tflite` bytes by `route` ("function" or "saved_model_folder"), converted as
    `export_tflite` converts, the folder route put in place of its choice."""
    from unittest import mock

    from keras_bert_core.export import tflite

    chosen = tflite._converter if route == "function" else tflite._saved_model_converter
    with mock.patch.object(tflite, "_converter", chosen):
        return tflite._convert(module, concrete, "serving_default", quantize=None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--live-objects", type=int, default=2_000_000)
    parser.add_argument("--out", default=os.path.join(common.RESULTS_DIR,
                                                      "tflite_conversion.json"))
    args = parser.parse_args()
    module, concrete = serving_function()
    routes = ("function", "saved_model_folder")
    files = [convert(route, module, concrete) for route in routes]  # also a warm-up
    differing_bytes = (sum(a != b for a, b in zip(*files, strict=True))
                       if len(set(map(len, files))) == 1 else None)
    results, kept = {}, []
    for heap in ("as_started", f"plus_{args.live_objects}_objects"):
        if heap != "as_started":
            kept = [[] for _ in range(args.live_objects)]
        seconds = {route: [] for route in routes}
        for _ in range(args.rounds):
            for route in routes:
                start = time.process_time()
                convert(route, module, concrete)
                seconds[route].append(time.process_time() - start)
        results[heap] = {route: {"cpu_s_median": statistics.median(values),
                                 "cpu_s_best": min(values), "cpu_s": values}
                         for route, values in seconds.items()}
    del kept
    print(f"bytes that differ: {differing_bytes}\n| process | route | CPU s, median | best |\n"
          "|---|---|---:|---:|")
    for heap, rows in results.items():
        for route, row in rows.items():
            print(f"| {heap} | {route} | {row['cpu_s_median']:.2f} | {row['cpu_s_best']:.2f} |")
    common.emit({"machine": common.machine_info(), "rounds": args.rounds,
                 "differing_bytes": differing_bytes, "results": results}, args.out)


if __name__ == "__main__":
    main()
