"""Training runs as a user meets them: killed with SIGKILL in a process of their own and
resumed in this one (from another working directory; the kill needs a process, the resume
does not); inputs that `--overwrite` must not touch, data that cannot train, and bad options,
each ending with one line and no traceback (bad options in a process of their own, the rest
in this one: a new process is not what they are about)."""

import json
import os
import random
import signal
import subprocess
import sys

import pytest

from keras_bert_core.training import completed_steps
from tests.cli.conftest import DATA, TINY_CONFIG, VOCAB, assert_one_line_error
from tests.training.toys import wait_until

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
TIMEOUT = 600


def kbc_command(*argv):
    return [sys.executable, "-m", "keras_bert_core.cli", *(str(arg) for arg in argv)]


def run_kbc(*argv, cwd, stdin=None):
    return subprocess.run(kbc_command(*argv), capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=TIMEOUT, input=stdin)


def metrics_steps(run_dir):
    with open(run_dir / "metrics.jsonl") as f:
        records = [json.loads(line) for line in f]
    return ([r["step"] for r in records if r["event"] == "step"],
            [(r["epoch"], r["step"]) for r in records if r["event"] == "epoch"])


def last_logged_step(run_dir):
    try:
        with open(run_dir / "metrics.jsonl") as f:
            return max((json.loads(line)["step"] for line in f if line.endswith("\n")),
                       default=0)
    except FileNotFoundError:
        return 0


def kill_at_step(argv, run_dir, step, cwd):
    """Starts `kbc argv`, sends SIGKILL once `metrics.jsonl` shows `step`; returns the last
    step logged before the kill."""
    process = subprocess.Popen(kbc_command(*argv), cwd=cwd, env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: last_logged_step(run_dir) >= step, process, f"step {step}", TIMEOUT)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    return last_logged_step(run_dir)


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_text(json.dumps(TINY_CONFIG))
    return path


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    """200 labeled texts of the test vocabulary's words."""
    words = [w for w in VOCAB.read_text().split() if w.isalpha()]
    rng = random.Random(0)
    rows = [f"{' '.join(rng.choices(words, k=6))},{rng.choice(['good', 'bad'])}"
            for _ in range(200)]
    path = tmp_path_factory.mktemp("data") / "reviews.csv"
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_pretrain_killed_mid_epoch_resumes_from_another_folder_losing_few_steps(
        kbc, corpus, config_file, tmp_path):
    run_dir = tmp_path / "work" / "run"
    (tmp_path / "work").mkdir()
    argv = ("pretrain", corpus, "--vocab", VOCAB, "--config", config_file, "--seq-length", 32,
            "--batch-size", 4, "--epochs", 3, "--steps-per-epoch", 35, "--backup-every", 20,
            "--run-dir", "run")
    killed_at = kill_at_step(argv, run_dir, 50, cwd=tmp_path / "work")
    backed_up = completed_steps(str(run_dir))
    # Killed at the step-50 log after the backup of step 40: mid-epoch 2 (steps 36 to 70).
    assert 0 <= killed_at - backed_up <= 20 and not (run_dir / "model.keras").exists()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = kbc("pretrain", "--resume", "--run-dir", run_dir, cwd=elsewhere)
    assert resumed.code == 0, resumed.err[-3000:]
    assert f"after step {backed_up} of 105" in resumed.err
    steps, epochs = metrics_steps(run_dir)
    assert steps == [50, 100]  # each once, in order
    assert epochs == [(1, 35), (2, 70), (3, 105)]
    assert (run_dir / "model.keras").exists()


@pytest.mark.slow
def test_finetune_killed_mid_epoch_resumes_and_partial_runs_say_so(
        kbc, reviews, config_file, tmp_path):
    run_dir = tmp_path / "run"
    argv = ("finetune", "--task", "classify", "--train", reviews, "--vocab", VOCAB,
            "--config", config_file, "--seq-length", 16, "--batch-size", 4, "--epochs", 3,
            "--backup-every", 20, "--run-dir", run_dir)
    killed_at = kill_at_step(argv, run_dir, 60, cwd=tmp_path)
    backed_up = completed_steps(str(run_dir))
    assert 0 <= killed_at - backed_up <= 20

    for command in (("evaluate", run_dir, reviews), ("export", run_dir, "-o", tmp_path / "x"),
                    ("predict", run_dir)):
        assert_one_line_error(kbc(*command, cwd=tmp_path, stdin="a film\n"),
                              "has not finished training", "kbc finetune --resume")

    resumed = kbc("finetune", "--resume", "--run-dir", run_dir, cwd=tmp_path)
    assert resumed.code == 0, resumed.err[-3000:]
    # The killed command's lock was left behind; the resume takes it over and says so.
    assert f"{run_dir}: took over the lock of pid " in resumed.err
    assert "which no longer runs" in resumed.err
    steps, epochs = metrics_steps(run_dir)
    assert steps == [50, 100, 150]
    assert epochs == [(1, 50), (2, 100), (3, 150)]
    answer = kbc("predict", run_dir, cwd=tmp_path, stdin="a film\n")
    assert answer.code == 0, answer.err[-3000:]
    assert json.loads(answer.out)["label"] in ("good", "bad")


def test_overwrite_never_deletes_the_commands_own_inputs(kbc, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text((DATA / "sentiment.csv").read_text())
    (data / "notes.txt").write_text("unrelated\n")
    finetune = kbc("finetune", "--task", "classify", "--train", data / "train.csv",
                   "--text-column", "review", "--vocab", VOCAB, "--run-dir", data,
                   "--overwrite", cwd=tmp_path)
    assert_one_line_error(finetune, f"the output {data} contains the input")
    vocab = kbc("vocab", data / "notes.txt", "-o", data / "notes.txt", "--overwrite",
                cwd=tmp_path)
    assert_one_line_error(vocab, "is the input")
    pretrain = kbc("pretrain", data / "notes.txt", "--vocab", VOCAB, "--run-dir", data,
                   "--overwrite", cwd=tmp_path)
    assert_one_line_error(pretrain, f"the output {data} contains the input")
    assert sorted(os.listdir(data)) == ["notes.txt", "train.csv"]
    assert (data / "notes.txt").read_text() == "unrelated\n"


def test_data_that_cannot_train_stops_with_one_line_and_no_model(kbc, config_file, tmp_path):
    corpus = tmp_path / "small.txt"
    corpus.write_text("the film was good.\n\nthe plot was bad.\n")
    small = kbc("pretrain", corpus, "--vocab", VOCAB, "--config", config_file,
                "--batch-size", 4, "--seq-length", 32, "--run-dir", tmp_path / "a",
                cwd=tmp_path)
    assert_one_line_error(small, "small.txt", "not enough text for one batch of 4")
    assert not (tmp_path / "a").exists()

    diverging = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                    "--text-column", "review", "--vocab", VOCAB, "--config", config_file,
                    "--seq-length", 32, "--batch-size", 2, "--epochs", 20,
                    "--learning-rate", 1e30,
                    "--run-dir", tmp_path / "b", cwd=tmp_path)
    assert_one_line_error(diverging, "the loss became", "training diverged")
    assert not (tmp_path / "b" / "model.keras").exists()


@pytest.mark.parametrize("option", [("--epochs", "0"), ("--epochs", "-1"),
                                    ("--batch-size", "0"), ("--steps-per-epoch", "0"),
                                    ("--seq-length", "1"), ("--backup-every", "0")])
def test_options_out_of_range_are_refused_by_the_parser(option, corpus, tmp_path):
    result = run_kbc("pretrain", corpus, "--vocab", VOCAB, *option, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"argument {option[0]}: {option[1]} is less than" in result.stderr


def test_inputs_that_are_not_what_they_should_be_get_one_line(kbc, tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café crème.\nanother line.\n".encode("latin-1"))
    assert_one_line_error(kbc("vocab", latin, "-o", tmp_path / "v.txt", cwd=tmp_path),
                          "latin.txt", "is not UTF-8", "line 1, column 4", "0xe9")
    specials = tmp_path / "specials.txt"
    specials.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    assert_one_line_error(
        kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
            "--text-column", "review", "--vocab", specials, cwd=tmp_path),
        "specials.txt", "holds only special tokens")
    torn = tmp_path / "torn.keras"
    torn.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    assert_one_line_error(
        kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
            "--text-column", "review", "--vocab", VOCAB, "--checkpoint", torn,
            "--batch-size", 2, cwd=tmp_path),
        "torn.keras", "not a complete zip archive")
    hugging_face = tmp_path / "hf"
    hugging_face.mkdir()
    (hugging_face / "config.json").write_text('{"model_type": "bert", "hidden_size": 32}')
    assert_one_line_error(kbc("evaluate", hugging_face, DATA / "sentiment.csv",
                              cwd=tmp_path), "is not a kbc run")
