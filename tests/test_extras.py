"""Optional dependencies (pyproject.toml's extras, keras_bert_core/extras.py): the core builds,
trains and exports with every optional package missing, and each feature that needs one ends
in one line naming the pip extra. Packages are hidden in a child process
(`sys.modules[name] = None` makes `import name` fail as if it were not installed)."""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from keras_bert_core.extras import OPTIONAL_MODULES
from tests.cli.conftest import DATA, VOCAB

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 600


def run_hidden(script, hidden=tuple(OPTIONAL_MODULES)):
    """Runs `script` in a new Python process where the `hidden` packages cannot be
    imported; returns the completed process."""
    prelude = f"import sys\nsys.modules.update(dict.fromkeys({list(hidden)!r}))\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_every_optional_package_comes_with_its_extra_and_with_all_and_test():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def packages(requirements):
        """Package names, with those of the extras a self-reference brings."""
        names = set()
        for requirement in requirements:
            name = re.split(r"[\[<>=~!;\s]", requirement, maxsplit=1)[0]
            if name == project["name"]:
                for extra in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                    names |= packages(extras[extra])
            else:
                names.add(name)
        return names

    core = packages(project["dependencies"])
    for module, (package, extra) in OPTIONAL_MODULES.items():
        assert package in packages(extras[extra]), (module, extra)
        assert package in packages(extras["all"]) and package in packages(extras["test"])
        assert package not in core
    assert packages(extras["cli"]) >= {"matplotlib", "tqdm", "tensorboard", "ai-edge-litert",
                                       "tokenizers"}  # all that `kbc` uses


def test_the_core_builds_trains_and_exports_with_no_optional_package(tmp_path):
    result = run_hidden(f"""
        import json, os, warnings
        import numpy as np
        import tensorflow as tf
        import keras_bert_core as kbc
        from keras_bert_core.training import fit_resumable, training_callbacks

        preprocessor = kbc.BertPreprocessor({str(VOCAB)!r}, seq_length=16)
        config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                       num_layers=1)
        model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
        model.compile(optimizer=kbc.BertAdamW(1e-3))
        x = {{k: v.numpy() for k, v in preprocessor(["a warm film", "it drags"]).items()}}
        data = tf.data.Dataset.from_tensors((x, np.array([1, 0])))
        run = {str(tmp_path / "run")!r}
        fit_resumable(model, data, run, epochs=1, steps_per_epoch=2, verbose=0,
                      callbacks=training_callbacks(run, tensorboard=False))
        try:
            training_callbacks(run)
        except ImportError as error:
            tensorboard = str(error)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path = kbc.export_saved_model(model, preprocessor, {str(tmp_path / "sm")!r})
        served = tf.saved_model.load(str(path)).signatures["serving_default"](
            text=tf.constant(["a warm film"]))["probabilities"].numpy()
        expected = tf.nn.softmax(model(x, training=False)).numpy()[:1]
        tflite = kbc.export_tflite(model, preprocessor, {str(tmp_path / "m.tflite")!r})
        print(json.dumps({{
            "served_equals_keras": bool(np.allclose(served, expected, atol=1e-5)),
            "tflite_bytes": os.path.getsize(tflite), "tensorboard": tensorboard,
            "warnings": [str(w.message) for w in caught if "warmup" in str(w.message)],
            "loaded": sorted(m for m in {list(OPTIONAL_MODULES)!r}
                             if sys.modules.get(m) is not None)}}))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["served_equals_keras"] and report["tflite_bytes"] > 0
    assert report["loaded"] == []
    assert report["tensorboard"].startswith("TensorBoard logs: tensorboard is not installed; "
                                            'pip install -e ".[cli]"')
    assert len(report["warnings"]) == 1 and 'pip install -e ".[serving]"' in (
        report["warnings"][0])


@pytest.fixture(scope="module")
def cli_errors(tmp_path_factory):
    """Each `kbc` command with the packages it needs hidden, all in one child process (each
    case hides its packages, runs `kbc`, and shows them again): `{case: (exit code, error
    lines, whether the run folder exists)}`."""
    folder = tmp_path_factory.mktemp("extras")
    (folder / "model.tflite").write_bytes(b"not read: the interpreter is missing first")
    preset = folder / "keras_hub_preset"
    preset.mkdir()
    (preset / "config.json").write_text(json.dumps({"class_name": "BertBackbone",
                                                    "config": {}}))
    (preset / "model.weights.h5").write_bytes(b"")
    corpus = folder / "corpus.txt"
    corpus.write_text("a warm film.\nthe plot drags.\n" * 20)
    finetune = ["finetune", "--task", "classify", "--vocab", VOCAB, "--run-dir",
                folder / "run"]
    cases = {
        "finetune": (["tensorboard", "matplotlib"],
                     [*finetune, "--train", DATA / "sentiment.csv", "--text-column", "review"]),
        "tfds": (["tensorflow_datasets"], [*finetune, "--tfds", "glue/sst2"]),
        "predict_tflite": (["ai_edge_litert"], ["predict", folder / "model.tflite"]),
        "vocab_bpe": (["tokenizers"], ["vocab", corpus, "--kind", "bpe", "-o", folder / "bpe"]),
        "convert_keras_hub": (["keras_hub"], ["convert", preset, folder / "out.keras"]),
        "demo": (["tqdm"], ["demo", "--quick", "--run-dir", folder / "run"]),
    }
    script = f"""
        import contextlib, io, json, os
        from unittest import mock
        from keras_bert_core.cli import main

        results = {{}}
        for case, (hidden, argv) in {json.dumps({k: (h, [str(a) for a in argv])
                                                 for k, (h, argv) in cases.items()})}.items():
            err = io.StringIO()
            sys.modules.update(dict.fromkeys(hidden))  # (never imported before: no restore)
            try:
                with mock.patch("sys.stdin", io.StringIO("a film\\n")), \\
                        contextlib.redirect_stderr(err):
                    code = main(argv)
            finally:
                for name in hidden:
                    del sys.modules[name]
            errors = [line for line in err.getvalue().splitlines() if "error: " in line]
            results[case] = (code, errors, os.path.exists({str(folder / "run")!r}))
        print(json.dumps(results))
    """
    result = run_hidden(script, hidden=())
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("case, extra, fragment", [
    ("finetune", "cli", "kbc finetune: error: a kbc training run: tensorboard is not installed"),
    ("tfds", "tfds", "the TFDS task glue/sst2: tensorflow-datasets is not installed"),
    ("predict_tflite", "litert", "model.tflite: ai-edge-litert is not installed"),
    ("vocab_bpe", "vocab", "learning a byte-level BPE vocabulary: tokenizers is not installed"),
    ("convert_keras_hub", "keras-hub", "keras_hub_preset: keras-hub is not installed"),
    ("demo", "cli", "kbc demo: error: kbc demo: tqdm is not installed"),
])
def test_a_missing_optional_package_ends_in_one_line_naming_its_extra(cli_errors, case, extra,
                                                                     fragment):
    code, errors, run_exists = cli_errors[case]
    assert code == 2
    assert len(errors) == 1, errors
    assert fragment in errors[0]
    assert f'pip install -e ".[{extra}]"' in errors[0]
    assert not run_exists  # said before anything was written
