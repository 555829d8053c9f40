"""Forward and forward+backward time of a BertEncoder on this machine's CPU.

    python bench/encoder_step.py --preset base --batch 8 --seq 128

Writes bench/results/encoder_<preset>.json and prints a markdown table. Figures, not tests.
"""

import argparse
import json
import os
import pathlib
import platform
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_bert_core as kbc  # noqa: E402


def median_seconds(step, repeats):
    step()  # trace and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jit", action="store_true", help="compile the steps with XLA")
    args = parser.parse_args()

    encoder = kbc.BertEncoder(kbc.BertConfig.preset(args.preset))
    rng = np.random.default_rng(0)
    shape = (args.batch, args.seq)
    inputs = {"token_ids": tf.constant(rng.integers(1000, 30000, shape), tf.int32),
              "segment_ids": tf.zeros(shape, tf.int32),
              "padding_mask": tf.ones(shape, tf.int32)}

    @tf.function(jit_compile=args.jit)
    def forward():
        return encoder(inputs, training=False)["pooled_output"]

    @tf.function(jit_compile=args.jit)
    def forward_backward():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(encoder(inputs, training=True)["pooled_output"] ** 2)
        return tape.gradient(loss, encoder.trainable_variables)

    result = {
        "preset": args.preset, "batch": args.batch, "seq": args.seq, "jit_compile": args.jit,
        "parameters": encoder.count_params(),
        "forward_s": median_seconds(forward, args.repeats),
        "forward_backward_s": median_seconds(forward_backward, args.repeats),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "tensorflow": tf.__version__,
    }
    result["train_sequences_per_s"] = args.batch / result["forward_backward_s"]
    out = pathlib.Path(__file__).parent / "results" / f"encoder_{args.preset}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| preset | batch x seq | forward (s) | forward+backward (s) | train seq/s |")
    print("|---|---|---|---|---|")
    print(f"| {args.preset} | {args.batch} x {args.seq} | {result['forward_s']:.3f} | "
          f"{result['forward_backward_s']:.3f} | {result['train_sequences_per_s']:.2f} |")


if __name__ == "__main__":
    main()
