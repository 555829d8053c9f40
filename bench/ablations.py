"""What makes our training step faster or slower: variants timed side by side in one process.

    python bench/ablations.py --task pretrain --preset mini --batch 32

Each variant is `train_step.py`'s `ours` step with one change, prototyped here (library
code is untouched; the fusions are switched off through `keras_bert_core.layers.fusion.fusion`).
All variants are built and warmed up first, then timed round robin, one step each in turn,
so that the machine's changing load reaches them alike:

- `default`: the task model as it ships (Keras leaves XLA off on a CPU-only machine);
- `jit`: `compile(jit_compile=True)`: XLA fuses the element-wise work (GELU, dropout
  masks, LayerNorm, AdamW's update) between the matmuls;
- `argmax_accuracy`: the masked-LM accuracy as Keras's `SparseCategoricalAccuracy`, whose
  `keras.ops.argmax` first rewrites negative zeros over the whole `[batch, 20, 30522]`
  logits on TensorFlow (an equal, a sign-bit test and a select per logit), instead of the
  package's `TopLogitAccuracy` (one max over the vocabulary);
- `no_metrics`: no metrics at all, the floor for what metrics cost;
- `full_last_layer`: the last block computes every position and the task reads its
  positions afterwards, instead of computing `[CLS]` (and the masked positions) alone;
- `keras_adamw`: Keras's `AdamW` (about ten element-wise ops per variable) instead of the
  package's `BertAdamW`, which does the same update with TensorFlow's fused
  `ResourceApplyAdam` kernel (one pass over each variable and its two moments);
- `unfused`: GELU and LayerNorm as TensorFlow's chains of element-wise ops in training too,
  instead of the package's one XLA kernel each way (`keras_bert_core/layers/fusion.py`);
- `keras_dense`: Keras's `Dense` on `[batch, seq, width]` (through `tensordot`, whose
  reshapes keep grappler from fusing MatMul + bias) instead of the package's `FlatDense`,
  which flattens the leading axes around its matmul and bias;
- `keras_hub_jit` (`--peers`): KerasHub's step with XLA, to show what XLA does for a peer.

Prints a markdown table, then the JSON line that it also writes to
bench/results/ablations_<task>_<preset>.json (or `--out`).
"""

import contextlib
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import train_step  # noqa: E402


@contextlib.contextmanager
def full_last_layer():
    """While task models are built: `BertEncoder.encode` computes every position of the last
    block, then gathers the positions the task asked for (same values, all the work)."""
    from keras import ops

    from keras_bert_core.models.encoder import BertEncoder

    trimmed = BertEncoder.encode

    def encode(self, inputs, output_positions=None):
        outputs = trimmed(self, inputs)
        if output_positions is None:
            return outputs
        sequence = outputs["sequence_output"]
        if isinstance(output_positions, str):  # "cls"
            outputs["sequence_output"] = sequence[:, :1]
        else:
            outputs["sequence_output"] = ops.take_along_axis(
                sequence, output_positions[:, :, None], axis=1)
        return outputs

    BertEncoder.encode = encode
    try:
        yield
    finally:
        BertEncoder.encode = trimmed


def keras_adamw():
    """Keras's own AdamW with the benchmark's settings (its Adam step element-wise)."""
    import keras

    optimizer = keras.optimizers.AdamW(
        common.LEARNING_RATE, weight_decay=common.ADAMW["weight_decay"],
        epsilon=common.ADAMW["epsilon"], global_clipnorm=common.ADAMW["global_clipnorm"])
    optimizer.exclude_from_weight_decay(var_names=common.ADAMW["exclude_from_weight_decay"])
    return optimizer


def variants(task, peers):
    """`{name: (framework, jit, build context, compile overrides)}`; overrides
    built lazily."""
    import keras

    from keras_bert_core.layers.fusion import fusion

    def argmax_accuracy():
        return {"weighted_metrics": {
            "mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}}

    none = contextlib.nullcontext
    table = {"default": ("ours", False, none, dict),
             "jit": ("ours", True, none, dict)}
    if task == "pretrain":
        table["argmax_accuracy"] = ("ours", False, none, argmax_accuracy)
        table["no_metrics"] = ("ours", False, none,
                               lambda: {"metrics": None, "weighted_metrics": None})
    table["full_last_layer"] = ("ours", False, full_last_layer, dict)
    table["keras_adamw"] = ("ours", False, none, lambda: {"optimizer": keras_adamw()})
    table["unfused"] = ("ours", False, lambda: fusion(elementwise=False), dict)
    table["keras_dense"] = ("ours", False, lambda: fusion(dense=False), dict)
    if peers:
        table["keras_hub_jit"] = ("keras_hub", True, none, dict)
    return table


def main():
    parser = train_step.argument_parser(__doc__, framework="ours")
    parser.add_argument("--peers", action="store_true", help="also time KerasHub with XLA")
    parser.add_argument("--only", nargs="*", help="variant names to run")
    args = parser.parse_args()

    arrays = common.synthetic_batch(args.batch, args.seq)
    runs, times, losses, kinds = {}, {}, {}, {}
    for name, (framework, jit, context, overrides) in variants(
            args.task, args.peers).items():
        if args.only and name not in args.only:
            continue
        args.jit = jit
        kinds[name] = {"framework": framework, "jit_compile": jit}
        with context():
            _, runs[name] = train_step.BUILDERS[framework](args, arrays, **overrides())
            runs[name](max(args.warmup, 1), 0)  # traces the step while the context holds
        times[name] = []
    # Round robin, one step of each variant in turn, so a change in the machine's load
    # reaches every variant alike.
    for _ in range(args.steps):
        for name, run in runs.items():
            step_times, losses[name] = run(0, 1)
            times[name] += step_times
    rows = {name: {**kinds[name], **common.summarize(times[name]),
                   "sequences_per_s": args.batch / statistics.median(times[name]),
                   "last_loss": losses[name][-1]} for name in runs}
    base = rows.get("default", next(iter(rows.values())))["median_s"]
    for row in rows.values():
        row["speedup_vs_default"] = base / row["median_s"]
    print("\n| variant | s/step | seq/s | vs default |\n|---|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['median_s']:.3f} | {row['sequences_per_s']:.2f} | "
              f"{row['speedup_vs_default']:.2f}x |")
    common.emit({"benchmark": "ablations", "task": args.task, "preset": args.preset,
                 "batch": args.batch, "seq": args.seq, "variants": rows},
                args.out or os.path.join(common.RESULTS_DIR,
                                         f"ablations_{args.task}_{args.preset}.json"))


if __name__ == "__main__":
    main()
