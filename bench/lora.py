"""LoRA vs full fine-tuning of a classifier: trainable parameters, file sizes, step time, memory.

    python bench/lora.py [--presets tiny base] [--batch 8] [--seq 128] [--rank 8] [--rounds 2]

For each preset (vocabulary 30522, tanh GELU, dropout 0.1, as bench/train_step.py builds
ours), two `BertClassifier`s with the same weights, optimizer (the package's AdamW with the
shared settings of bench/common.py) and data:

- full: every weight trains;
- lora: `kbc.enable_lora(model, rank, targets=("query", "value"))`: the adapters and the
  classification head train, the rest of the encoder is frozen.

Each runs in a process of its own (peak memory is per process): built and warmed up
(one untimed step, which traces it) alone, then `rounds` rounds time one `fit` step of each
in turn, so a change in the shared machine's speed reaches both alike. Reported per
process: trainable and total parameters, step times, peak resident memory (`ru_maxrss`)
and the resident memory before the first step (so `peak - before` is what training adds),
and the size of what a fine-tune must store: every weight of the model in one HDF5 file
(full) or `save_lora_weights`' file (lora), optimizer state left out of both. Prints one
JSON line; `--out` also writes it.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

MODES = ("full", "lora")
TARGETS = ("query", "value")


def parameters(variables):
    seen = {id(v): v for v in variables}
    return int(sum(math.prod(v.shape) for v in seen.values()))


def worker(args):
    """One model in this process: build, warm up, then the timed steps standard input asks
    for (train_step.py's `--serve` protocol); ends with its JSON line."""
    import tensorflow as tf
    from train_step import keras_fit_run, ours_compiled, serve

    import keras_bert_core as kbc

    arrays = common.synthetic_batch(args.batch, args.seq)
    options = argparse.Namespace(preset=args.preset, task="finetune", one_hot=False,
                                 remat="off", jit=False)
    model, x, y, weights = ours_compiled(options, arrays)
    summary = None
    if args.worker == "lora":
        summary = kbc.enable_lora(model, rank=args.rank, targets=TARGETS)
    run = keras_fit_run(model, x, y, weights)
    rss_before = common.current_rss_mb()
    times, losses = serve(run, warmup=1)
    peak = common.peak_rss_mb()  # before the file is written
    with tempfile.TemporaryDirectory() as directory:
        if args.worker == "lora":
            path = os.path.join(directory, "adapters.lora.h5")
            kbc.save_lora_weights(model, path)
        else:
            # What a full fine-tune must store: every weight, written as save_lora_weights
            # writes its own (Keras's save_weights would add the optimizer's moments).
            import h5py

            path = os.path.join(directory, "model.h5")
            with h5py.File(path, "w") as f:
                for variable in model.weights:
                    f.create_dataset(variable.path, data=variable.numpy())
        file_bytes = os.path.getsize(path)
    timing = common.summarize(times)
    common.emit({
        "benchmark": "lora", "mode": args.worker, "preset": args.preset,
        "batch": args.batch, "seq": args.seq,
        "rank": args.rank if summary else None, "targets": list(TARGETS) if summary else None,
        "trainable_parameters": parameters(model.trainable_weights),
        "total_parameters": parameters(model.weights),
        "adapter_parameters": summary.adapter_params if summary else 0,
        "times_s": times, **timing,
        "first_loss": losses[0], "last_loss": losses[-1],
        "rss_before_training_mb": round(rss_before, 1),
        "training_peak_rss_mb": round(peak, 1),
        "training_added_rss_mb": round(peak - rss_before, 1),
        "saved_file": os.path.basename(path), "saved_file_bytes": file_bytes,
        "tensorflow": tf.__version__,
    })


class Worker:
    """A `--worker` process driven over its standard input and output."""

    def __init__(self, mode, args):
        self.command = [sys.executable, os.path.abspath(__file__), "--worker", mode,
                        "--preset", args.preset_now, "--batch", str(args.batch),
                        "--seq", str(args.seq), "--rank", str(args.rank)]
        print("$", " ".join(os.path.relpath(c, common.REPO) if c.startswith(common.REPO)
                            else c for c in self.command[1:]), flush=True)
        self.log = tempfile.TemporaryFile("w+")  # a pipe could fill up and stall it
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, text=True,
                                        cwd=common.REPO)
        self.start = time.perf_counter()
        self.reply()  # {"ready": true} once built and warmed up

    def reply(self):
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        self.process.wait()
        self.log.seek(0)
        raise SystemExit(f"{' '.join(self.command[1:])} failed:\n{self.log.read()[-3000:]}")

    def ask(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.reply()

    def finish(self):
        result = self.ask("")
        self.process.wait()
        self.log.close()
        return {**result, "wall_s": round(time.perf_counter() - self.start, 1)}


def compare(args):
    presets = {}
    for preset in args.presets:
        args.preset_now = preset
        workers = {mode: Worker(mode, args) for mode in MODES}
        for index in range(args.rounds):
            # Alternate who goes first, so each follows the other as often.
            order = MODES if index % 2 == 0 else MODES[::-1]
            for mode in order:
                workers[mode].ask("1")
        results = {mode: worker.finish() for mode, worker in workers.items()}
        full, lora = results["full"], results["lora"]
        presets[preset] = {
            **results,
            "trainable_share": lora["trainable_parameters"] / full["trainable_parameters"],
            "file_share": lora["saved_file_bytes"] / full["saved_file_bytes"],
            "step_time_ratio": lora["median_s"] / full["median_s"],
            "training_added_rss_ratio": (lora["training_added_rss_mb"]
                                         / full["training_added_rss_mb"]),
            "peak_rss_ratio": lora["training_peak_rss_mb"] / full["training_peak_rss_mb"],
        }
        print(f"  {preset}: trainable {lora['trainable_parameters']:,} of "
              f"{full['trainable_parameters']:,}; file {lora['saved_file_bytes']:,} B vs "
              f"{full['saved_file_bytes']:,} B; step {lora['median_s']:.3f} s vs "
              f"{full['median_s']:.3f} s; peak RSS {lora['training_peak_rss_mb']:.0f} vs "
              f"{full['training_peak_rss_mb']:.0f} MB", flush=True)
    common.emit({"benchmark": "lora", "batch": args.batch, "seq": args.seq, "rank": args.rank,
                 "targets": list(TARGETS), "rounds": args.rounds, "presets": presets,
                 "machine": common.machine_info()}, args.out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "base"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="timed steps of each, in turns")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--preset", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
