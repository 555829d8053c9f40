"""Where a training step spends its time: TensorFlow's profiler, summed by op type.

    python bench/profile_step.py --framework ours --task pretrain --preset mini --batch 32

Builds the step exactly as `train_step.py` does (same flags), warms it up, records a few
steps with `tf.profiler` and sums the host CPU time of every TensorFlow op by type (MatMul,
Softmax, StatelessRandom..., _FusedMatMul...) and by the model scope it ran in. Op times
overlap where ops run in parallel, so shares are of summed op time, not of wall time.
Writes bench/results/profile_<framework>_<task>_<preset>.json and prints the top rows.
"""

import collections
import glob
import json
import os
import re
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import train_step  # noqa: E402


def op_times(logdir):
    """`{(op_type, op_name): total_ps}` from the host plane of an XSpace profile."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    totals = collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                # Op events are named "scope/op_name:OpType"; the executor's and the
                # function call's own events (which contain the ops) are left out.
                op_name, _, op_type = name.rpartition(":")
                if op_name and (hasattr(tf.raw_ops, op_type) or op_type.startswith("_")):
                    totals[op_type, op_name] += event.duration_ps
    return totals


def scope(op_name, depth=4):
    """`gradient_tape/encoder/block_*/attention` from a full op name: call wrappers and
    Keras's numeric suffixes dropped, block indices merged."""
    parts = []
    for part in op_name.split("/")[:-1]:
        part = re.sub(r"_\d+$", "", part)
        if part and part not in ("StatefulPartitionedCall", "PartitionedCall"):
            parts.append(re.sub(r"^(block|transformer_layer|layer)_?\d*$", r"\1_*", part))
    return "/".join(parts[:depth]) or "(top level)"


def main():
    parser = train_step.argument_parser(__doc__)
    parser.add_argument("--profile-steps", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    import tensorflow as tf

    arrays = common.synthetic_batch(args.batch, args.seq)
    _, run = train_step.BUILDERS[args.framework](args, arrays)
    run(max(args.warmup, 1), 1)
    logdir = tempfile.mkdtemp(prefix="bert_profile_")
    tf.profiler.experimental.start(logdir)
    run(1, args.profile_steps)
    tf.profiler.experimental.stop()

    totals = op_times(logdir)
    by_type, by_scope = collections.Counter(), collections.Counter()
    for (op_type, op_name), ps in totals.items():
        by_type[op_type] += ps
        by_scope[scope(op_name)] += ps
    total = sum(by_type.values())
    report = {
        "framework": args.framework, "task": args.task, "preset": args.preset,
        "batch": args.batch, "seq": args.seq, "jit_compile": args.jit,
        "profiled_steps": args.profile_steps + 1,
        "op_seconds_per_step": total / 1e12 / (args.profile_steps + 1),
        "by_op_type": {k: round(v / total, 4) for k, v in by_type.most_common(args.top)},
        "by_scope": {k: round(v / total, 4) for k, v in by_scope.most_common(args.top)},
        "by_op": {f"{name}:{op_type}": round(v / total, 4)
                  for (op_type, name), v in totals.most_common(args.top)},
    }
    name = f"profile_{args.framework}_{args.task}_{args.preset}{'_jit' if args.jit else ''}"
    path = os.path.join(common.RESULTS_DIR, name + ".json")
    with open(path, "w") as f:
        f.write(json.dumps(report, indent=2) + "\n")
    print(f"summed op time per step: {report['op_seconds_per_step']:.3f} s")
    for title, shares in (("op type", report["by_op_type"]), ("scope", report["by_scope"]),
                          ("op", report["by_op"])):
        print(f"\n| {title} | share |\n|---|---:|")
        for key, share in shares.items():
            print(f"| {key} | {share:.1%} |")


if __name__ == "__main__":
    main()
