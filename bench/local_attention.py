"""Banded vs dense sliding-window attention, and query-chunked vs whole global attention:
CPU time and peak memory of one attention call (ModernBERT-base heads, batch 1).

    python bench/local_attention.py [--lengths 512 2048 8192] [--heads 12] [--rounds 2]

Each measurement runs in a fresh process (peak RSS is per process): the process builds
random query/key/value `[1, heads, T, 64]` and an all-ones mask, traces one tf.function,
resets its peak RSS (/proc/self/clear_refs), calls it once and reads the peak above the
RSS before the call; then it times `--repeats` calls by CPU time (time.process_time,
TensorFlow on 2 intra-op threads). The routes take turns within each round, and the best
round counts. Routes:

- local-banded: `attend(..., window=128)`: key bands, [heads, T, 192] scores.
- local-dense: the same window as a T x T additive mask on dense attention.
- global-chunked: `attend(..., chunk_size=512)`: 512 queries at a time.
- global-dense: `attend(..., chunk_size=T)`: one chunk, a T x T score matrix.

Dense at 8,192 tokens holds several T x T float32 copies (3.2 GB each with 12 heads):
lower `--heads` on a small machine (both routes scale linearly with heads). Prints a
markdown table and writes JSON to `--out` if given.
"""

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

ROUTES = ("local-banded", "local-dense", "global-chunked", "global-dense")
WINDOW, HEAD_SIZE, CHUNK = 128, 64, 512


def _function(route, length):
    import numpy as np
    from keras import ops

    from keras_bert_core.layers.attention_masks import attention_bias
    from keras_bert_core.layers.chunked_attention import attend

    if route == "local-banded":
        return lambda q, k, v, m: attend(q, k, v, m, window=WINDOW)
    if route == "global-chunked":
        return lambda q, k, v, m: attend(q, k, v, m, chunk_size=CHUNK)
    if route == "global-dense":
        return lambda q, k, v, m: attend(q, k, v, m, chunk_size=length)
    band = np.abs(np.arange(length)[:, None] - np.arange(length)[None, :]) <= WINDOW // 2
    band_bias = np.where(band, 0.0, -1e9).astype("float32")

    def dense_local(q, k, v, m):
        scores = ops.matmul(q, ops.swapaxes(k, 2, 3)) + attention_bias(m) + band_bias
        return ops.matmul(ops.softmax(scores, axis=-1), v)

    return dense_local


def child(route, length, heads, repeats):
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    q, k, v = (tf.constant(rng.normal(size=(1, heads, length, HEAD_SIZE)).astype("float32"))
               for _ in range(3))
    mask = tf.ones((1, length), tf.int32)
    function = tf.function(_function(route, length), autograph=False)
    function.get_concrete_function(q, k, v, mask)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak RSS (VmHWM) to the current RSS
    before = common.proc_status_bytes("VmRSS:")
    function(q, k, v, mask).numpy()
    peak = common.proc_status_bytes("VmHWM:") - before
    start = time.process_time()
    for _ in range(repeats):
        function(q, k, v, mask).numpy()
    cpu = (time.process_time() - start) / repeats
    print(json.dumps({"route": route, "length": length, "heads": heads, "cpu_s": cpu,
                      "peak_bytes": peak}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--out")
    parser.add_argument("--child", nargs=2, metavar=("ROUTE", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.heads, args.repeats)
        return

    env = common.child_environment()
    best = {}
    for _ in range(args.rounds):
        for length in args.lengths:
            for route in args.routes:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", route, str(length),
                     "--heads", str(args.heads), "--repeats", str(args.repeats)],
                    check=True, capture_output=True, text=True, env=env).stdout
                row = json.loads(out.strip().splitlines()[-1])
                common.keep_best_round(best, (route, length), row)
    common.report_best_rounds(
        best, "route", f"heads {args.heads}, head size {HEAD_SIZE}, batch 1, window {WINDOW}, "
        f"chunk {CHUNK}; best of {args.rounds} rounds, {args.repeats} calls each", args.out)


if __name__ == "__main__":
    main()
