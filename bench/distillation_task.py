"""Distillation on a real task (issue 22): the real pretrained MiniLM-L6 fine-tuned as the
teacher, distilled into a small student with `kbc.Distiller`, against the same student
fine-tuned on the labels alone (same steps) and a bag-of-words model; sizes and per-text
TFLite latency of teacher and student.

    python bench/distillation_task.py [--max-train 1500] [--epochs 2] [--student-layers 0]
                                      [--unlabeled 12000] [--distill-epochs 2]
                                      [--unlabeled-packages pip,setuptools,numpy,_pytest]

- Task: the standard library topic task (`demo_corpus.topic_examples`, as `kbc demo` and
  `bench/finetune_minilm_vs_bag_of_words.py` use it): 5 topics, the held-out split holds
  whole modules training never saw. The same `--max-train` training texts (seed 0) as that
  bench.
- Teacher: `kbc.load_checkpoint` of all-MiniLM-L6-v2 (6 layers, hidden 384) with a
  `BertClassifier` head, fine-tuned `--epochs` epochs, seq_length 64.
- Student: `kbc.make_distilbert_student(teacher, teacher_layers=--student-layers)` (the
  fine-tuned teacher's embeddings, those layers, pooler and head copied).
- Distilled: `kbc.Distiller(teacher=None, student)` on the teacher's stored logits (computed
  once with the teacher in inference mode: the same soft targets as running it in the step),
  soft targets (T, alpha) plus the hard labels on the training texts, and soft targets alone
  on `--unlabeled` texts the teacher labels (sample weight 0 for the hard loss): training
  texts beyond `--max-train` (their labels unused), docstrings of standard library modules
  outside the five topics, and docstrings of the installed `--unlabeled-packages` (cut as
  the task's texts are). Held-out texts are never used.
- Labels only: a second copy of the same student initialization, fine-tuned on the labeled
  training texts for the same number of steps, same batch size and learning rate.
- Both students train on `kbc distill`'s and `kbc finetune`'s schedule: 10% warmup, then
  linear decay to 0 (`--schedule constant` for a constant learning rate instead).
- Both students are trained once per `--student-seeds` seed (dropout, data order); their
  held-out accuracies are reported per seed and as mean, min and max.
- Bag of words: `finetune_minilm_vs_bag_of_words.bag_of_words` (logistic regression on log
  word counts).
- Latency: `kbc.export_tflite` float32 files (text in, tokenizer inside), run with
  ai_edge_litert `InterpreterWithCustomOps` + tf.text's `SELECT_TFTEXT_OPS` (as
  `export/run_tflite.py` loads them), one text per call, `--calls` calls per model per
  round, the models in turns in this process, 2 rounds; short texts (the first 12 words of
  held-out texts) and whole held-out texts (up to 64 words). A 2-layer student (teacher
  layers 0 and 5) is exported and timed too, as the alternative that was considered.

Writes bench/results/distillation_task.json (after each stage, so a cut-off run keeps what
it measured) and prints a table. Figures, not tests.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
BENCH = pathlib.Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "export"))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import run_tflite  # noqa: E402
import tensorflow as tf  # noqa: E402
from finetune_minilm_vs_bag_of_words import bag_of_words, minilm_dir, split  # noqa: E402

import keras_bert_core as kbc  # noqa: E402
from keras_bert_core.cli.demo_corpus import (  # noqa: E402
    TOPICS,
    Docstring,
    read_docstrings,
    sentences,
    topic_examples,
    topic_of,
)
from keras_bert_core.models.distillation import TEACHER_OUTPUTS  # noqa: E402

RESULTS = BENCH / "results" / "distillation_task.json"
ALTERNATIVE_LAYERS = [0, 5]


def unlabeled_texts(docstrings, rest_of_train, excluded, count, rng, max_words=64):
    """Texts the teacher labels: training texts beyond the labeled ones, then docstrings of
    modules outside the five topics (cut as `topic_examples` cuts them), none in `excluded`."""
    others, seen = [], set(excluded) | set(rest_of_train)
    for doc in docstrings:
        if topic_of(doc.module) is not None:
            continue
        text = " ".join(" ".join(sentences(doc.text)).split()[:max_words])
        if text and text not in seen:
            seen.add(text)
            others.append(text)
    others = [others[i] for i in rng.permutation(len(others))]
    return (list(rest_of_train) + others)[:count], min(len(rest_of_train), count)


def package_docstrings(names):
    """Docstrings of installed packages (their modules named from the package down, so
    none is taken for a standard library topic module)."""
    docstrings = []
    for name in filter(None, names.split(",")):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"--unlabeled-packages: {name} is not an installed package")
        docstrings += [Docstring(f"{name}.{doc.module}", doc.text)
                       for doc in read_docstrings(spec.submodule_search_locations[0])]
    return docstrings


def repeated(x, y, weights, batch_size, seed):
    data = tf.data.Dataset.from_tensor_slices((x, y, weights))
    return data.shuffle(len(y), seed=seed).repeat().batch(batch_size, drop_remainder=True)


def accuracy(model, x, labels):
    logits = model.predict(x, batch_size=128, verbose=0)
    return float(np.mean(logits.argmax(-1) == labels))


def timed_tflite(interpreters, text_sets, calls):
    """Median ms per text of each interpreter, per text set and round (models in turns)."""
    timings = {name: {kind: [] for kind in text_sets} for name in interpreters}
    for _ in range(2):
        for kind, texts in text_sets.items():
            for name, interpreter in interpreters.items():
                run_tflite.run(interpreter, {"text": [texts[0]]})  # warm-up
                times = []
                for i in range(calls):
                    text = texts[i % len(texts)]
                    start = time.perf_counter()
                    run_tflite.run(interpreter, {"text": [text]})
                    times.append(1000 * (time.perf_counter() - start))
                timings[name][kind].append(round(float(np.median(times)), 3))
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-train", type=int, default=1500)
    parser.add_argument("--epochs", type=int, default=2, help="teacher fine-tuning epochs")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="teacher's")
    parser.add_argument("--student-layers", default="0",
                        help="the teacher's layers the student copies, comma-separated")
    parser.add_argument("--student-learning-rate", type=float, default=5e-4)
    parser.add_argument("--schedule", choices=("linear", "constant"), default="linear",
                        help="the students' learning rate: warmup + linear decay, or constant")
    parser.add_argument("--unlabeled", type=int, default=20000, help="at most this many")
    parser.add_argument("--unlabeled-packages",
                        default="pip,setuptools,numpy,_pytest,keras,matplotlib",
                        help="installed packages whose docstrings add unlabeled texts")
    parser.add_argument("--distill-epochs", type=float, default=2.0,
                        help="passes over labeled + unlabeled texts; sets the step count")
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.2)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--no-tflite", action="store_true",
                        help="accuracies only (for trying settings)")
    parser.add_argument("--teacher-cache", default=None,
                        help="weights file: loaded if it exists, else written after training")
    parser.add_argument("--seed", type=int, default=0, help="data split, teacher")
    parser.add_argument("--student-seeds", default="0,1,2",
                        help="students trained (distilled and labels only) per seed; the "
                             "first seed's distilled student is exported and timed")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    began = time.perf_counter()
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    results = {"benchmark": "distillation_task", "args": vars(args)}

    def save():
        results["elapsed_seconds"] = round(time.perf_counter() - began, 1)
        output.write_text(json.dumps(results, indent=2) + "\n")

    # Data: the same split and training subset as finetune_minilm_vs_bag_of_words.py.
    rng = np.random.default_rng(args.seed)
    docstrings = read_docstrings()
    train_examples, held_out_examples = topic_examples(docstrings)
    order = rng.permutation(len(train_examples))
    labels = list(TOPICS)
    train = ([train_examples[i][0] for i in order[:args.max_train]],
             np.array([labels.index(train_examples[i][1]) for i in order[:args.max_train]],
                      "int32"))
    held_out = split(held_out_examples, rng)
    packages = package_docstrings(args.unlabeled_packages)
    extra, extra_from_train = unlabeled_texts(
        docstrings + packages, [train_examples[i][0] for i in order[args.max_train:]],
        set(held_out[0]) | set(train[0]), args.unlabeled, np.random.default_rng(args.seed + 1))
    assert not set(extra) & set(held_out[0])
    results["task"] = {
        "name": "stdlib docstring topic (5 classes), held-out modules",
        "classes": labels, "train_labeled": len(train[0]), "held_out": len(held_out[0]),
        "unlabeled": len(extra), "unlabeled_from_train_modules": extra_from_train,
        "unlabeled_from_other_modules": len(extra) - extra_from_train,
        "unlabeled_packages": args.unlabeled_packages,
        "package_docstrings": len(packages),
        "majority_class_accuracy": round(float(np.bincount(held_out[1]).max()
                                               / len(held_out[1])), 4)}

    results["bag_of_words"] = bag_of_words(train, held_out, args.seed)
    save()

    # Teacher.
    folder = minilm_dir()
    preprocessor = kbc.BertPreprocessor(str(folder / "vocab.txt"), seq_length=args.seq_length,
                                        lower_case=True)
    x_train, x_held_out, x_extra = (preprocessor(t) for t in (train[0], held_out[0], extra))
    keras.utils.set_random_seed(args.seed)
    encoder, config = kbc.load_checkpoint(folder)
    teacher = kbc.BertClassifier(encoder, num_classes=len(labels))
    teacher.compile(optimizer=kbc.BertAdamW(args.learning_rate))
    start = time.perf_counter()
    if args.teacher_cache and os.path.exists(args.teacher_cache):
        teacher({k: v[:1] for k, v in x_train.items()})
        teacher.load_weights(args.teacher_cache)
        teacher_history = None
    else:
        teacher_history = teacher.fit(x_train, train[1], batch_size=args.batch_size,
                                      epochs=args.epochs, verbose=2).history["loss"]
        if args.teacher_cache:
            teacher.save_weights(args.teacher_cache)
    results["teacher"] = {
        "model": "all-MiniLM-L6-v2 + BertClassifier", "num_layers": config.num_layers,
        "hidden_size": config.hidden_size, "parameters": teacher.count_params(),
        "epochs": args.epochs, "learning_rate": args.learning_rate,
        "train_seconds": round(time.perf_counter() - start, 1),
        "train_loss_per_epoch": teacher_history and [round(v, 4) for v in teacher_history],
        "held_out_accuracy": accuracy(teacher, x_held_out, held_out[1])}
    print("teacher", results["teacher"], flush=True)
    save()

    # The teacher's soft targets, once, in inference mode.
    start = time.perf_counter()
    logits_train = teacher.predict(x_train, batch_size=128, verbose=0)
    logits_extra = teacher.predict(x_extra, batch_size=128, verbose=0)
    results["teacher"]["labeling_seconds"] = round(time.perf_counter() - start, 1)
    results["teacher"]["train_accuracy"] = float(np.mean(logits_train.argmax(-1) == train[1]))

    # Students: one initialization, two copies.
    layers = [int(i) for i in args.student_layers.split(",")]
    student_init = kbc.make_distilbert_student(teacher, teacher_layers=layers)
    init_weights = student_init.get_weights()
    rows = len(train[0]) + len(extra)
    steps = int(round(args.distill_epochs * rows / args.batch_size))
    results["student"] = {"teacher_layers": layers, "num_layers": len(layers),
                          "hidden_size": config.hidden_size,
                          "parameters": student_init.count_params(), "steps": steps,
                          "batch_size": args.batch_size,
                          "learning_rate": args.student_learning_rate,
                          "schedule": args.schedule,
                          "initial_held_out_accuracy": accuracy(student_init, x_held_out,
                                                                held_out[1])}

    def optimizer():
        if args.schedule == "constant":
            return kbc.BertAdamW(args.student_learning_rate)
        return kbc.create_optimizer(args.student_learning_rate, steps, int(0.1 * steps))

    def new_student():
        student = kbc.make_distilbert_student(teacher, teacher_layers=layers)
        student.set_weights(init_weights)
        student.compile(optimizer=optimizer())
        return student

    x_all = {k: np.concatenate([x_train[k], x_extra[k]]) for k in x_train}
    x_all[TEACHER_OUTPUTS] = np.concatenate([logits_train, logits_extra]).astype("float32")
    y_all = np.concatenate([train[1], np.zeros(len(extra), "int32")])
    w_all = np.concatenate([np.ones(len(train[0]), "float32"),
                            np.zeros(len(extra), "float32")])
    labeled_weights = np.ones(len(train[0]), "float32")

    def trained(model, x, y, weights, seed):
        start = time.perf_counter()
        history = model.fit(repeated(x, y, weights, args.batch_size, seed), epochs=1,
                            steps_per_epoch=steps, verbose=2).history
        return {"seed": seed, "train_seconds": round(time.perf_counter() - start, 1),
                "final_loss": round(history["loss"][-1], 4)}

    # Each student seed (its dropout and data order): distilled, then labels only.
    seeds = [int(seed) for seed in args.student_seeds.split(",")]
    distilled, labels_only = [], []
    results["student"]["distilled"] = {"temperature": args.temperature, "alpha": args.alpha,
                                       "per_seed": distilled}
    results["student"]["labels_only"] = {"per_seed": labels_only}
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        model = new_student()
        distiller = kbc.Distiller(None, model, temperature=args.temperature, alpha=args.alpha)
        distiller.compile(optimizer=optimizer())
        distilled.append({**trained(distiller, x_all, y_all, w_all, seed),
                          "held_out_accuracy": accuracy(model, x_held_out, held_out[1])})
        print("distilled", distilled[-1], flush=True)
        if seed == seeds[0]:
            student = model  # the one exported and timed
        keras.utils.set_random_seed(seed)
        model = new_student()
        labels_only.append({**trained(model, dict(x_train), train[1], labeled_weights, seed),
                            "held_out_accuracy": accuracy(model, x_held_out, held_out[1])})
        print("labels only", labels_only[-1], flush=True)
        for name, runs in (("distilled", distilled), ("labels_only", labels_only)):
            scores = [run["held_out_accuracy"] for run in runs]
            results["student"][name].update(held_out_accuracy=float(np.mean(scores)),
                                            min=min(scores), max=max(scores))
        results["student"]["kept_of_teacher"] = round(
            results["student"]["distilled"]["held_out_accuracy"]
            / results["teacher"]["held_out_accuracy"], 4)
        save()
    if args.no_tflite:
        return

    # TFLite: sizes, held-out accuracy of the files, per-text latency.
    alternative = kbc.make_distilbert_student(teacher, teacher_layers=ALTERNATIVE_LAYERS)
    models = {"teacher": teacher, "student": student,
              f"{len(ALTERNATIVE_LAYERS)}-layer alternative (latency only)": alternative}
    short = [" ".join(t.split()[:12]) for t in held_out[0]]
    with tempfile.TemporaryDirectory() as tmp:
        interpreters, tflite = {}, {}
        for i, (name, model) in enumerate(models.items()):
            path = kbc.export_tflite(model, preprocessor, os.path.join(tmp, f"{i}.tflite"))
            interpreters[name] = run_tflite.load(str(path))
            tflite[name] = {"bytes": os.path.getsize(path),
                            "parameters": model.count_params()}
        for name in ("teacher", "student"):
            predicted = [int(run_tflite.run(interpreters[name], {"text": [t]})[
                "probabilities"].argmax()) for t in held_out[0]]
            tflite[name]["held_out_accuracy"] = float(np.mean(np.array(predicted)
                                                              == held_out[1]))
        timings = timed_tflite(interpreters, {"short_12_words": short,
                                              "held_out_text": list(held_out[0])}, args.calls)
    for name in tflite:
        tflite[name]["median_ms_per_text"] = timings[name]
        tflite[name]["speedup_vs_teacher"] = {
            kind: round(float(np.median(timings["teacher"][kind])
                              / np.median(timings[name][kind])), 2)
            for kind in timings[name]}
    results["tflite"] = tflite
    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "load_average": [round(x, 2) for x in os.getloadavg()]}
    results["versions"] = {"keras": keras.__version__, "tensorflow": tf.__version__}
    save()

    t, s = results["teacher"], results["student"]
    print(f"\n{'model':<40}{'held-out acc':>13}{'params':>12}{'tflite MB':>11}"
          f"{'ms/short text':>15}")
    print(f"{'bag of words':<40}{results['bag_of_words']['held_out_accuracy']:>13.3f}")
    for name, accuracy_, key in (("teacher MiniLM-L6", t["held_out_accuracy"], "teacher"),
                                 (f"student {len(layers)}L distilled (seed mean)",
                                  s["distilled"]["held_out_accuracy"], "student")):
        f = tflite[key]
        print(f"{name:<40}{accuracy_:>13.3f}{f['parameters']:>12,}{f['bytes'] / 1e6:>11.1f}"
              f"{np.median(f['median_ms_per_text']['short_12_words']):>15.2f}")
    print(f"{f'student {len(layers)}L labels only (seed mean)':<40}"
          f"{s['labels_only']['held_out_accuracy']:>13.3f}")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
