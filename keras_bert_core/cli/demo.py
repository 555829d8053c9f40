"""`kbc demo`: the whole path, offline, on a corpus every Python has: its stdlib docstrings.

1. corpus: the standard library's docstrings, one sentence a line;
2. vocabulary: a WordPiece vocabulary learned from them;
3. pretraining: a tiny BERT, masked LM + next sentence;
4. fine-tuning: a classifier of the stdlib area a docstring documents (text, network, files,
   numbers, concurrency), trained on some modules and scored on held-out modules;
5. exports: a SavedModel and a TFLite file, tokenizer inside;
6. checks: both exports answer the held-out texts as the Keras model does; latency per text;
7. distillation: the classifier distilled into a student of every other layer (as
   DistilBERT is made), exported too: teacher against student in accuracy, size and
   TFLite time per text.

It reuses the subcommands' code (`vocab`, `pretrain`, `finetune`, `export`, `distill`), so
the run folder holds `pretrain/`, `finetune/` and `distill/` runs that `kbc predict` and
`kbc evaluate` read, plus `export/` and `student_export/`, `summary.json` and the curves
`pretraining.png`, `finetuning.png`.
"""

import collections
import os
import shutil
import time

import numpy as np

from keras_bert_core.cli import pretrain
from keras_bert_core.cli.comparison import export_latency, median_ms
from keras_bert_core.cli.demo_corpus import (
    TOPICS,
    read_docstrings,
    topic_examples,
    write_pretraining_corpus,
)
from keras_bert_core.cli.distill import distill
from keras_bert_core.cli.export import export, tflite_file
from keras_bert_core.cli.finetune import finetune
from keras_bert_core.cli.messages import progress, say, stage
from keras_bert_core.cli.model_building import VOCAB_FILE
from keras_bert_core.cli.options import TrainingOptions
from keras_bert_core.cli.predict import load_tflite
from keras_bert_core.cli.run_dir import CURVES_FILE, RunDirectory, default_run_dir
from keras_bert_core.cli.tasks import task_for
from keras_bert_core.cli.training_setup import (
    compile_for_training,
    training_scope,
    training_strategy,
)
from keras_bert_core.cli.vocab import learn_vocab
from keras_bert_core.config import BertConfig
from keras_bert_core.extras import require

# Sizes of a full run (under 10 minutes on 2 CPU cores) and of --quick (a smoke test).
PROFILES = {
    "full": {"vocab_size": 4000, "pretrain_epochs": 12, "steps_per_epoch": 50,
             "finetune_epochs": 5, "distill_epochs": 3, "train_examples": None,
             "held_out_examples": None, "latency_texts": 50},
    "quick": {"vocab_size": 1500, "pretrain_epochs": 2, "steps_per_epoch": 10,
              "finetune_epochs": 1, "distill_epochs": 1, "train_examples": 256,
              "held_out_examples": 64, "latency_texts": 8},
}


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true",
                        help="a much smaller run (about two minutes), for smoke tests")
    parser.add_argument("--run-dir", metavar="DIR",
                        help="where to write (default: runs/demo-<time>)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing run directory")
    parser.add_argument("--seq-length", type=int, default=64, help="tokens per text")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per step")
    for name in PROFILES["full"]:
        full, quick = (PROFILES[profile][name] or "all" for profile in ("full", "quick"))
        parser.add_argument("--" + name.replace("_", "-"), type=int,
                            help=f"default: {full} ({quick} with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")


def _topic_data(examples, limit, rng):
    from keras_bert_core.tasks.classification import TextClassificationData

    if limit is not None and limit < len(examples):
        examples = [examples[i] for i in sorted(rng.choice(len(examples), limit, False))]
    names = list(TOPICS)
    labels = np.array([names.index(topic) for _, topic in examples], np.int32)
    return TextClassificationData([text for text, _ in examples], None, labels, names)


def _corpus(run):
    with stage("reading the standard library's docstrings"):
        docstrings = read_docstrings()
    path = run.file("corpus.txt")
    documents = write_pretraining_corpus(docstrings, path)
    with open(path, encoding="utf-8") as f:
        sentences = sum(1 for line in f if line.strip())
    return docstrings, path, {"docstrings": len(docstrings), "documents": documents,
                              "sentences": sentences, "bytes": os.path.getsize(path)}


def _pretrain(run, args, size, corpus, vocab):
    from keras_bert_core.models import BertEncoder
    from keras_bert_core.models.pretrainer import BertPretrainer
    from keras_bert_core.text import BertTokenizer

    options = TrainingOptions(learning_rate=1e-3, seed=args.seed)  # a tiny model learns fast
    config = BertConfig.preset("tiny", vocab_size=len(vocab),
                               max_position_embeddings=args.seq_length)
    tokenizer = BertTokenizer(vocab)
    dataset = pretrain.pretraining_data(
        [corpus], tokenizer, args.seq_length, args.batch_size,
        max_predictions=round(0.15 * args.seq_length), seed=args.seed)
    with training_scope(options, training_strategy(options)):
        model = BertPretrainer(BertEncoder(config))
        compile_for_training(model, options,
                             size["pretrain_epochs"] * size["steps_per_epoch"])
    pretrain_run = RunDirectory.create(run.file("pretrain"))
    pretrain_run.write_config(args, config)
    pretrain_run.write_tokenizer(tokenizer)
    start = time.perf_counter()
    pretrain.train(pretrain_run, model, dataset, size["pretrain_epochs"],
                   size["steps_per_epoch"], checkpoint_every=size["pretrain_epochs"])
    records = pretrain_run.epoch_metrics()
    return model.encoder, {
        "model": f"tiny: {config.num_layers} layers x {config.hidden_size}, "
                 f"{model.encoder.count_params():,} weights",
        "steps": records[-1]["step"], "seconds": time.perf_counter() - start,
        "first_epoch_loss": records[0]["loss"], "last_epoch_loss": records[-1]["loss"],
        "mlm_accuracy": records[-1]["mlm_accuracy"], "nsp_accuracy": records[-1]["nsp_accuracy"],
    }


def _balanced_class_weight(train):
    # Topics are uneven (network docstrings outnumber the others) and differ between the
    # train and held-out modules: balanced class weights keep the classifier from simply
    # learning the training mix.
    counts = np.bincount(train.labels, minlength=len(train.label_names))
    return {label: len(train) / (len(counts) * max(count, 1))
            for label, count in enumerate(counts)}


def _finetune(run, args, size, encoder, vocab, train, held_out):
    from keras_bert_core.text import BertPreprocessor

    options = TrainingOptions(learning_rate=5e-4, seed=args.seed)
    task = task_for("classify", {"seq_length": args.seq_length, "lower_case": True})
    task.learn_labels(train)
    preprocessor = BertPreprocessor(vocab, seq_length=args.seq_length)
    dataset, rows = task.dataset(train, preprocessor, args.batch_size, training=True,
                                 seed=args.seed)
    with training_scope(options, training_strategy(options)):
        model = task.build_model(encoder)
        compile_for_training(model, options,
                             size["finetune_epochs"] * (rows // args.batch_size))
    finetune_run = RunDirectory.create(run.file("finetune"))
    finetune_run.write_config(args, encoder.config, task.settings)
    finetune_run.write_tokenizer(preprocessor.tokenizer)
    start = time.perf_counter()
    metrics = finetune(finetune_run, task, model, dataset, size["finetune_epochs"],
                       rows // args.batch_size, (held_out, preprocessor, args.batch_size),
                       _balanced_class_weight(train))
    counts = np.bincount(train.labels, minlength=len(train.label_names))
    held_out_counts = collections.Counter(held_out.labels.tolist())
    majority, majority_count = held_out_counts.most_common(1)[0]
    return model, task, preprocessor, {
        "train_examples": len(train), "held_out_examples": len(held_out),
        "epochs": size["finetune_epochs"], "seconds": time.perf_counter() - start,
        "held_out_accuracy": metrics["validation"]["accuracy"],
        "majority_label": held_out.label_names[majority],
        "majority_baseline": majority_count / len(held_out),
        "train_majority_baseline": held_out_counts[int(counts.argmax())] / len(held_out),
    }


def _agreement(reference, probabilities):
    return {"label_agreement": float(np.mean(reference.argmax(-1) == probabilities.argmax(-1))),
            "max_abs_probability_diff": float(np.abs(reference - probabilities).max())}


def _tflite_answer(path):
    """A function from one text to the probabilities of the .tflite file at `path`."""
    runner, _ = load_tflite(path)
    return lambda text: runner(text=np.array([text], dtype=object))["probabilities"][0]


def _check_exports(model, preprocessor, held_out, paths, batch_size, latency_texts):
    """Agreement of the exports with the Keras model on the held-out texts, and latency."""
    import tensorflow as tf

    from keras_bert_core.export import load_saved_model

    texts = held_out.texts
    logits = model.predict(preprocessor(texts), batch_size=batch_size, verbose=0)
    reference = tf.nn.softmax(logits).numpy()
    serve = load_saved_model(paths["saved_model"]).signatures["serving_default"]
    saved_model = np.concatenate([
        serve(text=tf.constant(texts[i:i + batch_size]))["probabilities"].numpy()
        for i in range(0, len(texts), batch_size)])
    tflite = _tflite_answer(paths["tflite"])
    tflite_probabilities = np.stack(
        [tflite(text) for text in progress(texts, title="TFLite on the held-out texts")])
    sample = texts[:latency_texts]
    preprocess = tf.function(preprocessor)  # as a serving program would run it
    latency = {
        "keras": median_ms(
            lambda t: model.predict_on_batch(preprocess(tf.constant([t]))), sample),
        "saved_model": median_ms(lambda t: serve(text=tf.constant([t])), sample),
        "tflite": median_ms(tflite, sample),
    }
    return {"saved_model": _agreement(reference, saved_model),
            "tflite": _agreement(reference, tflite_probabilities)}, latency


def _distill(run, args, size, teacher, task, preprocessor, train, held_out, teacher_tflite):
    """The fine-tuned classifier distilled into a student of its every other layer (weights
    copied, as DistilBERT starts), the student exported; teacher against student."""
    import tensorflow as tf

    from keras_bert_core.models import Distiller, make_distilbert_student

    options = TrainingOptions(learning_rate=5e-4, seed=args.seed)
    dataset, rows = task.dataset(train, preprocessor, args.batch_size, training=True,
                                 seed=args.seed)
    with training_scope(options, training_strategy(options)):
        student = make_distilbert_student(teacher)
        distiller = Distiller(teacher, student, temperature=2.0, alpha=0.5)
        compile_for_training(distiller, options,
                             size["distill_epochs"] * (rows // args.batch_size))
    distill_run = RunDirectory.create(run.file("distill"))
    distill_run.write_config(args, student.encoder.config, task.settings)
    distill_run.write_tokenizer(preprocessor.tokenizer)
    start = time.perf_counter()
    metrics = distill(distill_run, task, distiller, dataset, size["distill_epochs"],
                      rows // args.batch_size, (held_out, preprocessor, args.batch_size),
                      class_weight=_balanced_class_weight(train))
    seconds = time.perf_counter() - start
    export_dir = run.file("student_export")
    sizes = export(student, task, preprocessor, export_dir)
    tflite_path = os.path.join(export_dir, tflite_file("float32"))
    with stage("checking the student's TFLite file, timing it against the teacher's"):
        logits = student.predict(preprocessor(held_out.texts), batch_size=args.batch_size,
                                 verbose=0)
        tflite = _tflite_answer(tflite_path)
        agreement = _agreement(tf.nn.softmax(logits).numpy(),
                               np.stack([tflite(text) for text in held_out.texts]))
        latency = export_latency(
            {"teacher": {"tflite": teacher_tflite}, "student": {"tflite": tflite_path}},
            [{"text": text} for text in held_out.texts[:size["latency_texts"]]])
    config = student.encoder.config
    return {
        "student": f"{config.num_layers} layer{'s' if config.num_layers > 1 else ''} x "
                   f"{config.hidden_size}, every other layer of the teacher",
        "epochs": size["distill_epochs"], "seconds": seconds,
        "held_out_accuracy": metrics["validation"]["accuracy"],
        "parameters": {"teacher": teacher.count_params(), "student": student.count_params()},
        "export_bytes": {"saved_model": sizes[os.path.join(export_dir, "saved_model")],
                         "tflite": sizes[tflite_path]},
        "tflite_agreement": agreement,
        "tflite_ms": {name: latency[name]["tflite"] for name in latency},
    }


def summary_table(summary):
    """The demo's results as an aligned two-column text table."""
    p, f, a = summary["pretraining"], summary["finetuning"], summary["agreement"]
    d = summary["distillation"]
    sizes, latency = summary["export_bytes"], summary["latency_ms"]
    rows = [
        ("corpus", f"{summary['corpus']['docstrings']:,} stdlib docstrings, "
                   f"{summary['corpus']['sentences']:,} sentences, "
                   f"{summary['corpus']['bytes'] / 1e6:.1f} MB"),
        ("vocabulary", f"{summary['vocabulary_size']:,} wordpieces"),
        ("model", p["model"]),
        ("pretraining", f"{p['steps']} steps in {p['seconds']:.0f} s: loss "
                        f"{p['first_epoch_loss']:.2f} (first epoch) -> "
                        f"{p['last_epoch_loss']:.2f} (last)"),
        ("  MLM / NSP accuracy", f"{p['mlm_accuracy']:.1%} / {p['nsp_accuracy']:.1%}"),
        ("fine-tuning", f"5 topics, {f['train_examples']} train / {f['held_out_examples']} "
                        f"held-out texts, epochs: {f['epochs']}, {f['seconds']:.0f} s"),
        ("  held-out accuracy", f"{f['held_out_accuracy']:.1%} vs majority baseline "
                                f"{f['majority_baseline']:.1%} ({f['majority_label']})"),
        ("export sizes", f"SavedModel {sizes['saved_model'] / 1e6:.1f} MB, "
                         f"TFLite {sizes['tflite'] / 1e6:.1f} MB"),
        *((f"  {name} vs Keras", f"labels agree {a[key]['label_agreement']:.1%}, max |p diff| "
                                 f"{a[key]['max_abs_probability_diff']:.1e}")
          for name, key in (("SavedModel", "saved_model"), ("TFLite", "tflite"))),
        ("latency per text", f"Keras {latency['keras']:.1f} ms, SavedModel "
                             f"{latency['saved_model']:.1f} ms, TFLite {latency['tflite']:.1f} ms"),
        ("distillation", f"student: {d['student']}, epochs: {d['epochs']}, "
                         f"{d['seconds']:.0f} s"),
        ("  held-out accuracy", f"student {d['held_out_accuracy']:.1%} vs teacher "
                                f"{f['held_out_accuracy']:.1%}"),
        ("  parameters", f"student {d['parameters']['student']:,} vs teacher "
                         f"{d['parameters']['teacher']:,}"),
        ("  TFLite", f"student {d['export_bytes']['tflite'] / 1e6:.1f} MB, "
                     f"{d['tflite_ms']['student']:.2f} ms per text vs teacher "
                     f"{sizes['tflite'] / 1e6:.1f} MB, {d['tflite_ms']['teacher']:.2f} ms"),
        ("  student TFLite vs Keras",
         f"labels agree {d['tflite_agreement']['label_agreement']:.1%}, max |p diff| "
         f"{d['tflite_agreement']['max_abs_probability_diff']:.1e}"),
        ("wall time", f"{summary['wall_seconds'] / 60:.1f} min"),
    ]
    width = max(len(name) for name, _ in rows)
    rule = "-" * (width + 2 + max(len(value) for _, value in rows))
    lines = [f"kbc demo: {summary['run_dir']}", rule]
    lines += [f"{name:<{width}}  {value}" for name, value in rows]
    return "\n".join([*lines, rule])


def run(args):
    start = time.perf_counter()
    # Each is needed only minutes in (curves, logs, progress, the TFLite check): say so now.
    for module in ("matplotlib", "tensorboard", "tqdm", "ai_edge_litert.interpreter"):
        require(module, "kbc demo")
    size = PROFILES["quick" if args.quick else "full"]
    size = {name: value if getattr(args, name) is None else getattr(args, name)
            for name, value in size.items()}
    run_dir = RunDirectory.create(args.run_dir or default_run_dir("demo"), args.overwrite)
    run_dir.write_config(args)
    rng = np.random.default_rng(args.seed)

    docstrings, corpus, corpus_stats = _corpus(run_dir)
    vocab = learn_vocab([corpus], run_dir.file(VOCAB_FILE), size["vocab_size"])
    encoder, pretraining = _pretrain(run_dir, args, size, corpus, vocab)
    train, held_out = topic_examples(docstrings)
    train = _topic_data(train, size["train_examples"], rng)
    held_out = _topic_data(held_out, size["held_out_examples"], rng)
    model, task, preprocessor, finetuning = _finetune(run_dir, args, size, encoder, vocab,
                                                      train, held_out)
    export_dir = run_dir.file("export")
    sizes = export(model, task, preprocessor, export_dir)
    paths = {"saved_model": os.path.join(export_dir, "saved_model"),
             "tflite": os.path.join(export_dir, tflite_file("float32"))}
    with stage("checking the exports against the Keras model"):
        agreement, latency = _check_exports(model, preprocessor, held_out, paths,
                                            args.batch_size, size["latency_texts"])
    distillation = _distill(run_dir, args, size, model, task, preprocessor, train, held_out,
                            paths["tflite"])
    for stage_name, curves in (("pretrain", "pretraining.png"), ("finetune", "finetuning.png")):
        shutil.copyfile(run_dir.file(os.path.join(stage_name, CURVES_FILE)),
                        run_dir.file(curves))
    summary = {
        "run_dir": run_dir.path, "corpus": corpus_stats, "vocabulary_size": len(vocab),
        "pretraining": pretraining, "finetuning": finetuning,
        "export_bytes": {name: sizes[path] for name, path in paths.items()},
        "agreement": agreement, "latency_ms": latency, "distillation": distillation,
        "wall_seconds": time.perf_counter() - start,
    }
    run_dir.write_json("summary.json", summary)
    say(f"wrote {run_dir.path}: summary.json, pretraining.png, finetuning.png; the student: "
        "distill/, student_export/")
    print(summary_table(summary))
