"""What a new model's first `fit` costs before training starts: tracing the train step.

    python bench/first_fit.py --rounds 5

Every `kbc finetune`, every fine-tuning script and every test that trains pays it once per
model. Each round builds a small `BertClassifier` (`tiny` sizes, 2 layers) per variant,
compiles it with `create_optimizer` (AdamW, warmup + linear decay, clipping) and fits 2
steps, the variants taking turns in one process so the machine's load reaches them alike:

- `package`: the optimizer as it ships, each variable decayed in its own update
  (`keras_internals.WeightDecayInUpdateStep`);
- `keras_decay_pass`: Keras's own weight-decay pass before the update, which computes the
  learning rate, the schedule's every op, once more for each variable inside a
  cross-replica update of its own;
- `adam_scalars_per_variable`: `BertAdamW`'s step scalars (the step's beta powers, the
  learning rate, epsilon) made again for each variable instead of once per update.

Reports the CPU seconds of each first `fit` in the calling thread, where Python traces
(TensorFlow's pool threads, whose waiting spins only add noise, are left out), median and
best over the rounds; writes bench/results/first_fit.json (or `--out`).
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def package_optimizer():
    """`create_optimizer`'s AdamW, as every variant's settings."""
    from keras_bert_core.optimizers import create_optimizer

    return create_optimizer(1e-4, 100, 10)


def keras_decay_pass_optimizer():
    """The package's optimizer with Keras's weight-decay pass put back (bench only)."""
    import keras

    from keras_bert_core.optimizers import BertAdamW

    class KerasDecayPass(BertAdamW):
        _apply_weight_decay = keras.optimizers.AdamW._apply_weight_decay

        def decay_weight(self, variable, learning_rate):
            pass

    return KerasDecayPass.from_config(package_optimizer().get_config())


def adam_scalars_per_variable_optimizer():
    """The package's optimizer making its step scalars for each variable (bench only)."""
    from keras_bert_core.optimizers import BertAdamW

    class PerVariable(BertAdamW):
        def _adam_scalars(self, dtype, learning_rate):
            self._step_scalars = {}
            return super()._adam_scalars(dtype, learning_rate)

    return PerVariable.from_config(package_optimizer().get_config())


def first_fit(make_optimizer):
    """The calling thread's CPU seconds in a new model's first `fit`."""
    import keras
    import numpy as np

    import keras_bert_core as kbc

    config = kbc.BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=32)
    model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    model.compile(optimizer=make_optimizer())
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, size=(16, 32)).astype("int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    start = time.thread_time()
    model.fit(x, ids[:, 1] % 2, batch_size=8, epochs=1, verbose=0)
    seconds = time.thread_time() - start
    keras.backend.clear_session()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(common.RESULTS_DIR, "first_fit.json"))
    args = parser.parse_args()
    variants = {"package": package_optimizer,
                "keras_decay_pass": keras_decay_pass_optimizer,
                "adam_scalars_per_variable": adam_scalars_per_variable_optimizer}
    first_fit(variants["package"])  # warm-up: imports, first XLA kernels
    seconds = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, make in variants.items():
            seconds[name].append(first_fit(make))
    rows = {name: {"cpu_s_median": statistics.median(values), "cpu_s_best": min(values),
                   "cpu_s": values} for name, values in seconds.items()}
    print("| variant | CPU s, median | best |\n|---|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['cpu_s_median']:.3f} | {row['cpu_s_best']:.3f} |")
    common.emit({"machine": common.machine_info(), "rounds": args.rounds, "variants": rows},
                args.out)


if __name__ == "__main__":
    main()
