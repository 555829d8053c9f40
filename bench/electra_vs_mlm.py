"""ELECTRA's replaced-token detection against masked LM at the same compute.

The same small encoder (2 layers x 128, ELECTRA's configuration) is pretrained with each
objective on the demo's corpus (the standard library's docstrings, `kbc demo`) for the same
budget of process CPU time, then fine-tuned on the demo's task (the stdlib area a docstring
documents, 5 topics, trained on some modules and scored on held-out ones) as `kbc demo`
fine-tunes (5 epochs on all its training texts, lr 5e-4); three seeds each, the objectives
taking turns (`--objectives ... none` adds the control: fine-tuning from random weights).
Process CPU time, with TensorFlow on one thread each way, is what the budget counts, so
other work on a shared machine changes the wall time, not the compute each run gets. After
ELECTRA's pretraining a probe on fresh batches says whether its discriminator learned more
than the constant answer "nothing replaced".

    nice python bench/electra_vs_mlm.py                 # 150 CPU-s each, about 21 CPU-min
    nice python bench/electra_vs_mlm.py --budget 60     # a shorter run

Writes `bench/results/electra_vs_mlm.json` and prints the markdown table of
`bench/RESULTS.md`.
"""

import argparse
import json
import os
import pathlib
import sys
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
OBJECTIVES = ("mlm", "electra", "none")


WINDOW = 50  # steps per `fit` epoch: the last epoch's averages are the run's final scores


class CPUBudget(keras.callbacks.Callback):
    """Stops `fit` once the process has spent `seconds` of CPU time in it after its first
    step (which traces and compiles the step: each objective pays that once, outside the
    budget); counts the steps. Its `logs` are the averages over the last `WINDOW` steps or
    fewer (Keras averages within an epoch)."""

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


def detection_probe(model, dataset, batches=8):
    """The discriminator on fresh batches: the share of real tokens the generator's samples
    replaced, the loss of always answering that share (what a discriminator that learned
    nothing reaches), its own loss, and its recall and precision on replaced tokens."""
    replaced, logits = [], []
    for x, y, weights in dataset.take(batches):
        out = model({**x, "masked_ids": y["mlm"], "masked_weights": weights["mlm"]},
                    training=False)
        real = x["padding_mask"].numpy() > 0
        replaced.append(out["replaced"].numpy()[..., 0][real])
        logits.append(out["rtd"].numpy()[..., 0][real])
    replaced, logits = np.concatenate(replaced) > 0, np.concatenate(logits)
    share = replaced.mean()
    loss = np.mean(np.logaddexp(0.0, logits) - replaced * logits)  # sigmoid cross-entropy
    said = logits > 0
    return {"replaced_share": float(share),
            "constant_answer_loss": float(-(share * np.log(share)
                                            + (1 - share) * np.log(1 - share))),
            "rtd_loss": float(loss),
            "rtd_recall": float((said & replaced).sum() / max(1, replaced.sum())),
            "rtd_precision": float((said & replaced).sum() / max(1, said.sum()))}


def pretrained_encoder(objective, seed, budget, corpus, vocab, max_steps):
    keras.utils.set_random_seed(seed)
    config = BertConfig.preset("electra_small", vocab_size=len(vocab), num_layers=2,
                               hidden_size=128, num_heads=2, intermediate_size=512,
                               embedding_size=None, max_position_embeddings=SEQ_LENGTH)
    dataset = pretrain.pretraining_data(
        [corpus], BertTokenizer(vocab), SEQ_LENGTH, BATCH_SIZE,
        max_predictions=round(0.15 * SEQ_LENGTH), seed=seed, pair_task="none")
    encoder = BertEncoder(config)
    if objective == "none":  # the control: fine-tuning from random weights
        return encoder, {"cpu_seconds": 0.0, "first_step_cpu_seconds": 0.0,
                         "wall_seconds": 0.0, "steps": 0, "last_metrics": {}}
    if objective == "electra":
        model = ElectraPretrainer(encoder, generator_size=0.25, rtd_weight=50.0, seed=seed)
    else:
        model = BertPretrainer(encoder, next_sentence=False)
    compile_for_training(model, TrainingOptions(learning_rate=1e-3, seed=seed), max_steps)
    budget_callback = CPUBudget(budget)
    model.fit(dataset, epochs=max_steps // WINDOW, steps_per_epoch=WINDOW,
              callbacks=[budget_callback], verbose=0)
    probe = detection_probe(model, dataset) if objective == "electra" else {}
    return model.encoder, {**probe, "cpu_seconds": budget_callback.spent,
                           "first_step_cpu_seconds": budget_callback.compile_seconds,
                           "wall_seconds": budget_callback.wall, "steps": budget_callback.steps,
                           "last_metrics": budget_callback.logs}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=150.0,
                        help="CPU seconds of pretraining per run (default: 150)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    # Fine-tuning as `kbc demo` does: 5 epochs on every training text, scored on every
    # held-out one.
    parser.add_argument("--finetune-epochs", type=int, default=5)
    parser.add_argument("--train-examples", type=int, help="default: all")
    parser.add_argument("--held-out-examples", type=int, help="default: all")
    parser.add_argument("--objectives", nargs="+", choices=OBJECTIVES,
                        default=["mlm", "electra"],
                        help="none: fine-tune from random weights, the control")
    parser.add_argument("--output", type=pathlib.Path, default=OUTPUT)
    parser.add_argument("--max-steps", type=int, default=3000,
                        help="the learning-rate schedule's length (the budget ends runs first)")
    parser.add_argument("--table", type=pathlib.Path, metavar="JSON",
                        help="only print the markdown table of a result file")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
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
        shift = index % len(args.objectives)
        for objective in args.objectives[shift:] + args.objectives[:shift]:
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
    for objective in args.objectives:
        mine = [run for run in runs if run["objective"] == objective]
        accuracy = np.array([run["held_out_accuracy"] for run in mine])
        summary[objective] = {
            "steps": [run["pretraining"]["steps"] for run in mine],
            "pretrain_cpu_seconds": [round(run["pretraining"]["cpu_seconds"], 1) for run in mine],
            "pretrain_wall_seconds": [round(run["pretraining"]["wall_seconds"], 1)
                                      for run in mine],
            "accuracy_mean": float(accuracy.mean()), "accuracy_std": float(accuracy.std(ddof=1))
            if len(accuracy) > 1 else 0.0, "accuracies": accuracy.tolist()}
    result = {"command": " ".join(["bench/electra_vs_mlm.py", *sys.argv[1:]]),
              "budget_cpu_seconds": args.budget, "seeds": args.seeds,
              "finetune_epochs": args.finetune_epochs, "train_examples": len(train),
              "held_out_examples": len(held_out), "load_average_end": list(os.getloadavg()),
              "wall_minutes": (time.perf_counter() - start) / 60, "summary": summary,
              "runs": runs}
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))


def table(result):
    """The markdown table of `bench/RESULTS.md` for a result of this benchmark."""
    def listed(values, digits=0):
        return ", ".join(f"{value:.{digits}f}" for value in values)

    lines = ["| objective | pretraining CPU-s per run (+ first step) | steps | wall s "
             "| fine-tuning CPU-s | held-out accuracy, mean ± sd | per seed |",
             "|---|---|---|---|---|---:|---|"]
    for objective, s in result["summary"].items():
        runs = [run for run in result["runs"] if run["objective"] == objective]
        first = listed([run["pretraining"]["first_step_cpu_seconds"] for run in runs], 1)
        lines.append(
            f"| {objective} | {listed(s['pretrain_cpu_seconds'])} (+ {first}) "
            f"| {listed(s['steps'])} | {listed(s['pretrain_wall_seconds'])} "
            f"| {listed([run['finetune_cpu_seconds'] for run in runs])} "
            f"| **{s['accuracy_mean']:.1%} ± {s['accuracy_std']:.1%}** "
            f"| {', '.join(f'{a:.1%}' for a in s['accuracies'])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
