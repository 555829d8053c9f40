"""Our training step against its own matmuls and optimizer update, timed in one process.

    python bench/step_matmuls.py --task pretrain --preset mini --batch 32

The matmuls are read from the graph of one traced training step of ours (forward and
backward, the gradients exactly as `fit` takes them), with their shapes and transposes, in
the step's order. One `tf.function` runs them all on inputs of their own (as a step's
activations are) and nothing else; the optimizer update (the package's AdamW with clipping
by global norm, on the model's variables) is timed alone; and the step itself runs through
`fit`. The three take turns, `--repeats` rounds, so that the machine's changing load
reaches them alike; medians are reported. Everything else a step does (softmax, LayerNorm,
GELU, dropout, the loss, gathers, bias adds) is the step's time above the other two; what
they leave is what matmul kernels, TensorFlow's for every framework, decide. Each distinct
matmul is also timed alone, for its FLOP/s. Prints one JSON line; `--out` also writes it.
"""

import collections
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import train_step  # noqa: E402

# Op type -> its two transpose attributes; the gradient tape writes these and no others.
MATMULS = {"MatMul": ("transpose_a", "transpose_b"), "BatchMatMulV2": ("adj_x", "adj_y"),
           "BatchMatMulV3": ("adj_x", "adj_y")}


def step_matmuls(graph):
    """`(op_type, a_shape, b_shape, flag_a, flag_b)` of the graph's matmuls, in its order."""
    found = []
    for op in graph.get_operations():
        if op.type not in MATMULS:
            continue
        shapes = [tuple(t.shape.as_list()) for t in op.inputs[:2]]
        if any(None in shape for shape in shapes):
            raise SystemExit(f"{op.name}: a matmul without a static shape {shapes}")
        found.append((op.type, *shapes, *(op.get_attr(a) for a in MATMULS[op.type])))
    return found


def matmul_flops(op_type, a_shape, b_shape, flag_a, flag_b):
    rows, inner = a_shape[-2:][::-1] if flag_a else a_shape[-2:]
    columns = b_shape[-2] if flag_b else b_shape[-1]
    batch = 1
    for size in a_shape[:-2]:
        batch *= size
    return 2 * batch * rows * inner * columns


def best_time(fn, repeats):
    return min(common.step_times(fn, warmup=1, steps=repeats))


def matmul(key, a, b):
    import tensorflow as tf

    op_type, _, _, flag_a, flag_b = key
    if op_type == "MatMul":
        return tf.raw_ops.MatMul(a=a, b=b, transpose_a=flag_a, transpose_b=flag_b)
    extra = {"Tout": tf.float32} if op_type == "BatchMatMulV3" else {}
    return getattr(tf.raw_ops, op_type)(x=a, y=b, adj_x=flag_a, adj_y=flag_b, **extra)


def matmuls_runner(keys):
    """A call that runs the matmuls `keys` in one `tf.function`, each on inputs of its own
    (so that none is merged with an equal one); a corner of each result is kept."""
    import tensorflow as tf

    inputs = [(tf.random.uniform(key[1]), tf.random.uniform(key[2])) for key in keys]

    @tf.function
    def run_all(inputs):
        return tf.add_n([tf.reshape(matmul(key, a, b), [-1])[0]
                         for key, (a, b) in zip(keys, inputs, strict=True)])

    return lambda: run_all(inputs)


def optimizer_runner(model):
    """A call that runs the optimizer's own step on every trainable variable."""
    import tensorflow as tf

    variables = model.trainable_variables
    model.optimizer.build(variables)
    gradients = [tf.random.normal(v.shape, stddev=1e-3) for v in variables]
    update = tf.function(lambda: model.optimizer.apply(gradients, variables))
    return update


def main():
    parser = train_step.argument_parser(__doc__, framework="ours")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the three timings")
    args = parser.parse_args()
    import tensorflow as tf

    model, x, y, weights = train_step.ours_compiled(args, common.synthetic_batch(
        args.batch, args.seq))
    keys = step_matmuls(tf.function(model._loss_and_gradients).get_concrete_function(
        x, y, weights).graph)
    run_fit = train_step.keras_fit_run(model, x, y, weights)
    matmuls_alone, optimizer_alone = matmuls_runner(keys), optimizer_runner(model)
    # The step's seconds are timed inside `fit` (after a warm-up step).
    medians = common.medians_in_turns({
        "matmul_s": common.timed(lambda _: matmuls_alone()),
        "optimizer_s": common.timed(lambda _: optimizer_alone()),
        "step_s": lambda _: run_fit(1, 1)[0][0]}, range(args.repeats))
    matmuls = []
    for key, count in sorted(collections.Counter(keys).items(),
                             key=lambda item: -matmul_flops(*item[0])):
        seconds = best_time(matmuls_runner([key]), args.repeats)
        matmuls.append({"op": key[0], "a": key[1], "b": key[2], "transposed": key[3:],
                        "count": count, "best_s": seconds,
                        "flops_per_s": matmul_flops(*key) / seconds})
    common.emit({
        "benchmark": "step_matmuls", "framework": "ours", "task": args.task,
        "preset": args.preset, "batch": args.batch, "seq": args.seq,
        **medians, "rest_s": medians["step_s"] - medians["matmul_s"] - medians["optimizer_s"],
        "step_flops": sum(matmul_flops(*key) for key in keys),
        "counted_flops": common.training_flops(args.preset, args.batch, args.seq, args.task),
        "matmuls": matmuls, "tensorflow": tf.__version__,
    }, args.out)


if __name__ == "__main__":
    main()
