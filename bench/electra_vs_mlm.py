"""ELECTRA's replaced-token detection against masked LM at the same compute.

The same small encoder (2 layers x 128, ELECTRA's configuration) is pretrained with each
objective on the demo's corpus (the standard library's docstrings, `kbc demo`) for the same
budget of process CPU time, then fine-tuned on the demo's task (the stdlib area a docstring
documents, 5 topics, trained on some modules and scored on held-out ones) for the same
epochs; three seeds each, the objectives taking turns. Process CPU time, with TensorFlow on
one thread each way, is what the budget counts, so other work on a shared machine changes
the wall time, not the compute each run gets.

    nice python bench/electra_vs_mlm.py                 # 150 CPU-s each, about 25 CPU-min
    nice python bench/electra_vs_mlm.py --budget 60     # a shorter run

Writes `bench/results/electra_vs_mlm.json` and prints the markdown table of
`bench/RESULTS.md`.
"""

import argparse
import json
import os
import pathlib
import tempfile
import time

import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_bert_core.cli import demo, pretrain  # noqa: E402
from keras_bert_core.cli.demo_corpus import (  # noqa: E402
    read_docstrings,
    topic_examples,
    write_pretraining_corpus,
)
from keras_bert_core.cli.options import TrainingOptions  # noqa: E402
from keras_bert_core.cli.run_dir import RunDirectory  # noqa: E402
from keras_bert_core.cli.training_setup import compile_for_training  # noqa: E402
from keras_bert_core.cli.vocab import learn_vocab  # noqa: E402
from keras_bert_core.config import BertConfig  # noqa: E402
from keras_bert_core.models import BertEncoder, BertPretrainer, ElectraPretrainer  # noqa: E402
from keras_bert_core.text import BertTokenizer  # noqa: E402

OUTPUT = pathlib.Path(__file__).with_name("results") / "electra_vs_mlm.json"
SEQ_LENGTH, BATCH_SIZE = 64, 32


class CPUBudget(keras.callbacks.Callback):
    """Stops `fit` once the process has spent `seconds` of CPU time in it after its first
    step (which traces and compiles the step: each objective pays that once, outside the
    budget); counts the steps."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.steps = 0

    def on_train_begin(self, logs=None):
        self.first = time.process_time()

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.steps == 1:
            self.compile_seconds = time.process_time() - self.first
            self.start, self.wall = time.process_time(), time.perf_counter()
            return
        self.spent = time.process_time() - self.start
        if self.spent >= self.seconds:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        self.wall = time.perf_counter() - self.wall
        self.logs = {key: float(value) for key, value in (logs or {}).items()}


def pretrained_encoder(objective, seed, budget, corpus, vocab, max_steps):
    keras.utils.set_random_seed(seed)
    config = BertConfig.preset("electra_small", vocab_size=len(vocab), num_layers=2,
                               hidden_size=128, num_heads=2, intermediate_size=512,
                               embedding_size=None, max_position_embeddings=SEQ_LENGTH)
    dataset = pretrain.pretraining_data(
        [corpus], BertTokenizer(vocab), SEQ_LENGTH, BATCH_SIZE,
        max_predictions=round(0.15 * SEQ_LENGTH), seed=seed, pair_task="none")
    encoder = BertEncoder(config)
    if objective == "electra":
        model = ElectraPretrainer(encoder, generator_size=0.25, rtd_weight=50.0, seed=seed)
    else:
        model = BertPretrainer(encoder, next_sentence=False)
    compile_for_training(model, TrainingOptions(learning_rate=1e-3, seed=seed), max_steps)
    budget_callback = CPUBudget(budget)
    model.fit(dataset, epochs=1, steps_per_epoch=max_steps, callbacks=[budget_callback],
              verbose=0)
    return model.encoder, {"cpu_seconds": budget_callback.spent,
                           "first_step_cpu_seconds": budget_callback.compile_seconds,
                           "wall_seconds": budget_callback.wall, "steps": budget_callback.steps,
                           "last_metrics": budget_callback.logs}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=150.0,
                        help="CPU seconds of pretraining per run (default: 150)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--finetune-epochs", type=int, default=2)
    parser.add_argument("--train-examples", type=int, default=1024)
    parser.add_argument("--held-out-examples", type=int, default=512)
    parser.add_argument("--max-steps", type=int, default=3000,
                        help="the learning-rate schedule's length (the budget ends runs first)")
    args = parser.parse_args()
    start = time.perf_counter()
    work = pathlib.Path(tempfile.mkdtemp(prefix="electra_vs_mlm-"))
    docstrings = read_docstrings()
    corpus = str(work / "corpus.txt")
    write_pretraining_corpus(docstrings, corpus)
    vocab = learn_vocab([corpus], str(work / "vocab.txt"), 2000)
    rng = np.random.default_rng(0)
    train, held_out = topic_examples(docstrings)
    train = demo._topic_data(train, args.train_examples, rng)
    held_out = demo._topic_data(held_out, args.held_out_examples, rng)
    size = {"finetune_epochs": args.finetune_epochs}
    runs = []
    for index, seed in enumerate(args.seeds):
        # The objectives take turns, so neither always runs on a busier machine.
        order = ("mlm", "electra") if index % 2 == 0 else ("electra", "mlm")
        for objective in order:
            keras.backend.clear_session()
            encoder, pretraining = pretrained_encoder(objective, seed, args.budget, corpus,
                                                      vocab, args.max_steps)
            run = RunDirectory.create(str(work / f"{objective}-{seed}"))
            cpu = time.process_time()
            finetune_args = argparse.Namespace(command="finetune", seq_length=SEQ_LENGTH,
                                               batch_size=BATCH_SIZE, seed=seed)
            print(json.dumps({"objective": objective, "seed": seed, **pretraining}),
                  flush=True)
            *_, finetuning = demo._finetune(run, finetune_args, size, encoder, vocab, train,
                                            held_out)
            runs.append({"objective": objective, "seed": seed, "pretraining": pretraining,
                         "finetune_cpu_seconds": time.process_time() - cpu,
                         "held_out_accuracy": finetuning["held_out_accuracy"],
                         "majority_baseline": finetuning["majority_baseline"]})
            print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for objective in ("mlm", "electra"):
        mine = [run for run in runs if run["objective"] == objective]
        accuracy = np.array([run["held_out_accuracy"] for run in mine])
        summary[objective] = {
            "steps": [run["pretraining"]["steps"] for run in mine],
            "pretrain_cpu_seconds": [round(run["pretraining"]["cpu_seconds"], 1) for run in mine],
            "pretrain_wall_seconds": [round(run["pretraining"]["wall_seconds"], 1)
                                      for run in mine],
            "accuracy_mean": float(accuracy.mean()), "accuracy_std": float(accuracy.std(ddof=1))
            if len(accuracy) > 1 else 0.0, "accuracies": accuracy.tolist()}
    result = {"budget_cpu_seconds": args.budget, "seeds": args.seeds,
              "finetune_epochs": args.finetune_epochs, "train_examples": len(train),
              "held_out_examples": len(held_out), "load_average_end": list(os.getloadavg()),
              "wall_minutes": (time.perf_counter() - start) / 60, "summary": summary,
              "runs": runs}
    OUTPUT.parent.mkdir(exist_ok=True)
    OUTPUT.write_text(json.dumps(result, indent=2) + "\n")
    print("| objective | pretraining CPU-s per run | steps | wall s | held-out accuracy "
          "(mean ± sd) | per seed |")
    print("|---|---:|---|---|---:|---|")
    for objective, s in summary.items():
        print(f"| {objective} | {args.budget:.0f} | {s['steps']} | {s['pretrain_wall_seconds']} "
              f"| {s['accuracy_mean']:.1%} ± {s['accuracy_std']:.1%} | "
              f"{[round(a, 3) for a in s['accuracies']]} |")


if __name__ == "__main__":
    main()
