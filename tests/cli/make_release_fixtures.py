"""Writes tests/cli/data/release_0_1_0/: tiny `kbc finetune` runs as release 0.1.0 wrote
them, and what `kbc evaluate` and `kbc predict` printed for them (and for the run's
SavedModel export, for a preset of the classifier: `classify_preset/`, and for a raw-text
classifier saved from Python: `text_classifier.keras`), so that
tests/cli/test_release_runs.py can show later releases still read them and answer the same.

Run once, from a checkout of the release (0.1.0), with the package's `cli` extra:

    python tests/cli/make_release_fixtures.py
    python tests/cli/make_release_fixtures.py --preset   # the preset alone, of the runs there
    python tests/cli/make_release_fixtures.py --keras    # the .keras file alone

Each run keeps only what `kbc evaluate`, `predict` and `export` read (config.json, the
vocabulary, tokenizer_config.json, model.keras, metrics.json): the backups, logs and
curves are left out to keep the fixture small.
"""

import contextlib
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "text" / "data" / "tasks"
OUTPUT = HERE / "data" / "release_0_1_0"
TINY_CONFIG = {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "intermediate_size": 32,
               "max_position_embeddings": 32}
KEPT = ("config.json", "vocab.txt", "tokenizer_config.json", "model.keras", "metrics.json")

# Run name -> (finetune arguments, labeled data, predict input).
RUNS = {
    "classify": (["--task", "classify", "--train", DATA / "sentiment.csv",
                  "--text-column", "review"], DATA / "sentiment.csv", DATA / "sentiment.csv"),
    "squad": (["--task", "squad", "--train", DATA / "squad_v2.json", "--doc-stride", 16,
               "--max-query-length", 12, "--null-score-threshold", 0.5],
              DATA / "squad_v2.json", DATA / "squad_v2.json"),
    "ner": (["--task", "ner", "--train", DATA / "ner.conll"], DATA / "ner.conll",
            DATA / "ner.conll"),
}
# What an export of the classifier answers, as `kbc predict saved_model` printed it.
EXPORT_TEXTS = "A warm, funny film.\nThe plot drags.\nIt was fine.\n"


def kbc(*argv):
    """`kbc ARGV` in this process; its standard output."""
    from keras_bert_core.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(arg) for arg in argv])
    if code != 0:
        sys.exit(f"kbc {' '.join(map(str, argv))} failed ({code})")
    return out.getvalue()


def main():
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    scratch = pathlib.Path(tempfile.mkdtemp())
    config = scratch / "tiny.json"
    config.write_text(json.dumps(TINY_CONFIG))
    for name, (arguments, labeled, inputs) in RUNS.items():
        trained = scratch / name
        kbc("finetune", *arguments, "--vocab", DATA / "vocab.txt", "--config", config,
            "--seq-length", 32, "--batch-size", 2, "--epochs", 2, "--learning-rate", 1e-3,
            "--run-dir", trained)
        run = OUTPUT / name
        run.mkdir()
        for file in KEPT:
            if (trained / file).exists():
                shutil.copy(trained / file, run / file)
        (OUTPUT / f"{name}.evaluate.json").write_text(kbc("evaluate", run, labeled))
        (OUTPUT / f"{name}.predict.jsonl").write_text(kbc("predict", run, "--input", inputs))
    texts = scratch / "texts.txt"
    texts.write_text(EXPORT_TEXTS)
    kbc("export", OUTPUT / "classify", "--output", scratch / "export", "--format",
        "saved_model")
    (OUTPUT / "classify.export.predict.jsonl").write_text(
        kbc("predict", scratch / "export" / "saved_model", "--input", texts))
    shutil.rmtree(scratch)
    write_preset()
    write_keras_file()
    os.chmod(OUTPUT, 0o755)


def write_preset():
    """The classifier run as a preset (`kbc export --format preset`) and what `kbc predict`
    printed for it."""
    scratch = pathlib.Path(tempfile.mkdtemp())
    kbc("export", OUTPUT / "classify", "--output", scratch / "out", "--format", "preset")
    shutil.rmtree(PRESET, ignore_errors=True)
    shutil.copytree(scratch / "out" / "preset", PRESET)
    (OUTPUT / "classify_preset.predict.jsonl").write_text(
        kbc("predict", PRESET, "--input", RUNS["classify"][2]))
    shutil.rmtree(scratch)


def write_keras_file():
    """A classifier that carries its preprocessor, saved from Python, and its outputs on
    `EXPORT_TEXTS` (`text_classifier.json`)."""
    import keras

    import keras_bert_core as kbc

    keras.utils.set_random_seed(0)
    encoder = kbc.BertEncoder(kbc.BertConfig.from_dict(
        {**TINY_CONFIG, "vocab_size": len((DATA / "vocab.txt").read_text().split())}))
    model = kbc.BertClassifier(encoder, num_classes=2, preprocessor=kbc.BertPreprocessor(
        str(DATA / "vocab.txt"), seq_length=32))
    model.save(KERAS_FILE)
    texts = EXPORT_TEXTS.splitlines()
    (OUTPUT / "text_classifier.json").write_text(json.dumps(
        {"texts": texts, "logits": model.predict(texts, verbose=0).tolist()}))


PRESET = OUTPUT / "classify_preset"
KERAS_FILE = OUTPUT / "text_classifier.keras"

if __name__ == "__main__":
    {"--preset": write_preset, "--keras": write_keras_file}.get(
        (sys.argv[1:] or [None])[0], main)()
