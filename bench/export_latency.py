"""Export figures: file sizes, parity and per-text latency, SavedModel vs each TFLite variant.

    python bench/export_latency.py                    # "mini" classifier, seq_length 128
    python bench/export_latency.py --preset tiny --texts 100

A classifier trained briefly (so its logits have margins) is exported as a SavedModel and
as `.tflite` files with float32, int8 dynamic-range and float16 weights. On the same
varied English texts (tests/export/helpers.py) it measures:

- sizes: the SavedModel directory and each `.tflite` file;
- parity: max |probability difference| of the float32 TFLite file and of the SavedModel
  against the Keras model's (TFLite pads to seq_length, the SavedModel to the batch's
  longest text), and of each quantized file against float32, with label agreement;
- latency: one text per call, the median and 90th percentile over the texts, for the
  SavedModel's `serving_default` signature and each TFLite file in the LiteRT interpreter.

Writes bench/results/export.json and prints a markdown table. Figures, not tests.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "export"))

import common  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import run_tflite  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_bert_core as kbc  # noqa: E402
from keras_bert_core.export import export_saved_model, export_tflite  # noqa: E402
from keras_bert_core.models.classifier import BertClassifier  # noqa: E402
from keras_bert_core.text.preprocessor import BertPreprocessor  # noqa: E402
from tests.export.helpers import rule_label, varied_texts  # noqa: E402

TFLITE_VARIANTS = {"float32": None, "dynamic": "dynamic", "float16": "float16"}




def trained_classifier(preprocessor, preset, epochs):
    keras.utils.set_random_seed(0)
    config = kbc.BertConfig.preset(preset, vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=max(512, preprocessor.seq_length))
    model = BertClassifier(kbc.BertEncoder(config), num_classes=3, dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    texts = varied_texts(256, seed=1)
    model.fit(preprocessor(texts), np.array([rule_label(t) for t in texts]), batch_size=32,
              epochs=epochs, verbose=0)
    return model


def per_text(run_one, texts):
    """Outputs stacked over texts, and the milliseconds of each call (after a warm-up)."""
    run_one(texts[0])
    outputs, times = [], []
    for text in texts:
        start = time.perf_counter()
        outputs.append(run_one(text))
        times.append(1000 * (time.perf_counter() - start))
    return np.concatenate(outputs), times


def figures(path, probabilities, reference, reference_name, times):
    """Size, parity against `reference` and per-text latency of one export."""
    path = pathlib.Path(path)
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return {"bytes": sum(f.stat().st_size for f in files), "compared_with": reference_name,
            "max_abs_diff": float(np.abs(probabilities - reference).max()),
            "label_agreement": float(
                (probabilities.argmax(-1) == reference.argmax(-1)).mean()),
            "median_ms": float(np.median(times)), "p90_ms": float(np.percentile(times, 90))}


def markdown(result):
    rows = ["| export | size (MB) | max abs diff | label agreement | median ms/text "
            "| p90 ms/text |", "|---|---|---|---|---|---|"]
    for name, figures in result["exports"].items():
        rows.append(f"| {name} | {figures['bytes'] / 1e6:.2f} | {figures['max_abs_diff']:.2e} "
                    f"(vs {figures['compared_with']}) | {figures['label_agreement']:.3f} "
                    f"| {figures['median_ms']:.2f} | {figures['p90_ms']:.2f} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2, help="training epochs on 256 texts")
    parser.add_argument("--vocab", default=None, help="uncased BERT vocab.txt")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "export.json"))
    args = parser.parse_args()

    vocab = args.vocab or common.default_vocab()
    preprocessor = BertPreprocessor(vocab, seq_length=args.seq_length)
    model = trained_classifier(preprocessor, args.preset, args.epochs)
    texts = varied_texts(args.texts)
    keras_probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(
        model(preprocessor(texts, static_shape=False), training=False)))

    exports = {}
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = export_saved_model(model, preprocessor, os.path.join(tmp, "saved_model"),
                                        warmup=False)
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        served, times = per_text(
            lambda t: serve(text=tf.constant([t]))["probabilities"].numpy(), texts)
        exports["SavedModel"] = figures(export_dir, served, keras_probabilities, "Keras", times)
        for variant, quantize in TFLITE_VARIANTS.items():  # float32 first
            path = export_tflite(model, preprocessor, os.path.join(tmp, f"{variant}.tflite"),
                                 quantize=quantize)
            interpreter = run_tflite.load(path)
            probabilities, times = per_text(
                lambda t, i=interpreter: run_tflite.run(i, {"text": [t]})["probabilities"],
                texts)
            if variant == "float32":
                float32 = probabilities
                exports["TFLite float32"] = figures(path, probabilities, served, "SavedModel",
                                                    times)
            else:
                exports[f"TFLite {variant}"] = figures(path, probabilities, float32,
                                                       "TFLite float32", times)

    result = {"benchmark": "export", "preset": args.preset, "seq_length": args.seq_length,
              "texts": len(texts), "tensorflow": tf.__version__, "cpu_cores": os.cpu_count(),
              "load_average": [round(x, 2) for x in os.getloadavg()], "exports": exports}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
