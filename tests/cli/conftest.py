"""Shared runs for the CLI tests: one tiny pretraining run, one fine-tuned classifier and its
preset and exports, made once per session and reused by the tests that read, export or
continue them."""

import dataclasses
import io
import json
import os
import pathlib
import random
import shutil
from unittest import mock

import pytest

from keras_bert_core.cli import main
from tests.helpers import built_once

DATA = pathlib.Path(__file__).resolve().parents[1] / "text" / "data" / "tasks"
VOCAB = DATA / "vocab.txt"
# Small enough that a run trains in seconds.
TINY_CONFIG = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64,
               "max_position_embeddings": 64}


@dataclasses.dataclass
class Result:
    code: int
    out: str
    err: str


def assert_one_line_error(result, *fragments):
    """`kbc` (a subprocess, or a `Result` of the `kbc` fixture) ended with exit 2 and one
    error line holding every fragment."""
    code, stderr = ((result.code, result.err) if isinstance(result, Result)
                    else (result.returncode, result.stderr))
    assert code == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if "error: " in line]
    assert len(errors) == 1, stderr[-3000:]
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def _in_process(capture, monkeypatch):
    def run(*argv, cwd=None, stdin=None):
        # `kbc` sets TensorFlow's environment variables for the process it starts; here that
        # is the test session, whose later subprocesses must not inherit them.
        with mock.patch.dict(os.environ), monkeypatch.context() as patch:
            if cwd is not None:
                patch.chdir(cwd)
            if stdin is not None:
                patch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)) if isinstance(
                    stdin, bytes) else io.StringIO(stdin))
            code = main([str(arg) for arg in argv])
        out, err = capture.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def kbc(capsys, monkeypatch):
    """Runs `kbc ARGS...` in this process (in folder `cwd=`, reading `stdin=`, text or
    bytes, if given); returns its exit code, stdout and stderr."""
    return _in_process(capsys, monkeypatch)


@pytest.fixture
def kbc_fd(capfd, monkeypatch):
    """`kbc` that captures at the file descriptors: TensorFlow's C++ log too, which writes
    past `sys.stderr`."""
    return _in_process(capfd, monkeypatch)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """Documents of sentences made of the test vocabulary's words, a blank line apart."""
    words = [w for w in VOCAB.read_text().split() if w.isalpha()]
    rng = random.Random(0)
    documents = ["\n".join(" ".join(rng.choices(words, k=rng.randint(4, 10))) + "."
                           for _ in range(rng.randint(2, 5))) for _ in range(60)]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n\n".join(documents) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_text(json.dumps(TINY_CONFIG))
    return path


def _kbc(*argv):
    assert main([str(arg) for arg in argv]) == 0


@pytest.fixture(scope="session")
def pretrain_run(tmp_path_factory, corpus, tiny_config):
    return built_once(tmp_path_factory, "pretrain", lambda run_dir: _kbc(
        "pretrain", corpus, "--vocab", VOCAB, "--config", tiny_config, "--seq-length", 32,
        "--batch-size", 4, "--epochs", 2, "--steps-per-epoch", 2, "--run-dir", run_dir))


@pytest.fixture(scope="session")
def classify_run(tmp_path_factory, pretrain_run):
    return built_once(tmp_path_factory, "classify", lambda run_dir: _kbc(
        "finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
        "--validation", DATA / "sentiment.csv", "--text-column", "review",
        "--checkpoint", pretrain_run, "--seq-length", 32, "--batch-size", 2, "--epochs", 2,
        "--learning-rate", 1e-3, "--run-dir", run_dir))


@pytest.fixture(scope="session")
def run_preset(classify_run, tmp_path_factory):
    """The preset `kbc export --format preset` writes from the fine-tuned classifier run
    (read it; copy it to change it)."""
    def export(output):
        with mock.patch.dict(os.environ):
            _kbc("export", classify_run, "-o", output, "--format", "preset")

    return built_once(tmp_path_factory, "classify_preset", export) / "preset"


@pytest.fixture(scope="session")
def classify_export(classify_run, tmp_path_factory):
    """`kbc export` of the classifier run's model.keras copied alone (the file is the whole
    model), with two TFLite variants: saved_model/, model.tflite, model_dynamic.tflite
    (read them; copy them to change them)."""
    def export(folder):
        folder.mkdir()
        model_file = shutil.copy(classify_run / "model.keras", folder / "clf.keras")
        with mock.patch.dict(os.environ):
            _kbc("export", model_file, "--output", folder / "export", "--tflite-variants",
                 "float32", "dynamic")
        assert not [p for p in os.listdir(folder) if ".partial-" in p]  # renamed when done

    return built_once(tmp_path_factory, "classify_export", export) / "export"


@pytest.fixture(scope="session")
def embed_run(tmp_path_factory, tiny_config):
    """A tiny embedding model fine-tuned on pairs (`kbc finetune --task embed`), validated on
    its own pairs."""
    return built_once(tmp_path_factory, "embed", lambda run_dir: _kbc(
        "finetune", "--task", "embed", "--train", DATA / "pairs.csv", "--validation",
        DATA / "pairs.csv", "--vocab", VOCAB, "--config", tiny_config, "--seq-length", 16,
        "--batch-size", 4, "--epochs", 1, "--learning-rate", 1e-3, "--length-buckets", 8, 16,
        "--run-dir", run_dir))
