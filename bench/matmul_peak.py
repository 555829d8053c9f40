"""This machine's float32 matmul peak, as TensorFlow reaches it: the best of a few big matmuls.

    python bench/matmul_peak.py [--repeats 5]

The denominator of the training benchmark's "fraction of peak". Several shapes are tried
(square ones and BERT-base's feed-forward matmul, `[1024, 768] x [768, 3072]`), since
Eigen's blocking suits some better than others; the best time of the best shape counts.
Prints one JSON line.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

SHAPES = ((2048, 2048, 2048), (3072, 3072, 3072), (4096, 768, 3072), (4096, 3072, 768))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()

    import tensorflow as tf

    shapes = {}
    for m, k, n in SHAPES:
        a = tf.random.normal([m, k], dtype=tf.float32)
        b = tf.random.normal([k, n], dtype=tf.float32)

        @tf.function
        def matmul(a=a, b=b):
            # A scalar result keeps copying the product out of the timing.
            return tf.reduce_sum(tf.matmul(a, b)[0, :1])

        times = common.step_times(lambda f=matmul: float(f()), warmup=1, steps=args.repeats)
        shapes[f"{m}x{k}x{n}"] = 2 * m * k * n / min(times)
    best = max(shapes, key=shapes.get)
    common.emit({"benchmark": "matmul_peak", "dtype": "float32", "best_shape": best,
                 "flops_per_s_by_shape": shapes, "peak_flops_per_s": shapes[best],
                 "tensorflow": tf.__version__}, args.out)


if __name__ == "__main__":
    main()
