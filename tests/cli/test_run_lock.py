"""A run folder has one writer: a second command that would write it, with or without
`--overwrite`, is refused with a line naming the first, and the first ends with a coherent run;
a lock left by a dead process is taken over with a line that says so. The concurrent writer is
a `kbc` process of its own (a live lock held by another process is the point); the rest runs
in this process."""

import json
import os
import shutil
import socket
import subprocess
import sys

import keras

from keras_bert_core.folder_lock import LOCK_FILE
from tests.cli.conftest import DATA, VOCAB, assert_one_line_error
from tests.training.toys import wait_until

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
TIMEOUT = 600


def write_lock(folder, pid, host=None):
    (folder / LOCK_FILE).write_text(json.dumps({
        "pid": pid, "host": host or socket.gethostname(), "command": "kbc finetune --task x",
        "started": "2026-11-26T22:00:00+00:00", "process_start": None}))


def _reaped_pid():
    """The id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_second_writer_is_refused_naming_the_first_which_ends_a_coherent_run(
        kbc, tiny_config, tmp_path):
    words = [w for w in VOCAB.read_text().split() if w.isalpha()]
    rows = [f"{' '.join(words[i:i + 6])},{('good', 'bad')[i % 2]}" for i in range(160)]
    reviews = tmp_path / "reviews.csv"
    reviews.write_text("text,label\n" + "\n".join(rows) + "\n")
    run_dir = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "keras_bert_core.cli", *map(str, (
        "finetune", "--task", "classify", "--train", reviews, "--vocab", VOCAB, "--config",
        tiny_config, "--seq-length", 16, "--batch-size", 4, "--epochs", 1, "--run-dir",
        run_dir, "--quiet"))], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (run_dir / LOCK_FILE).exists(), first, "its lock", TIMEOUT)
        second = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                     "--text-column", "review", "--vocab", VOCAB, "--config", tiny_config,
                     "--seq-length", 16, "--batch-size", 2, "--epochs", 1, "--run-dir", run_dir,
                     "--overwrite")
        assert_one_line_error(second, f"{run_dir} is being written by pid {first.pid} on "
                                      f"{socket.gethostname()} since ", "kbc finetune --task "
                                      f"classify --train {reviews}")
        # A reader is told the run is being written, not that it is no run or was stopped.
        assert_one_line_error(kbc("evaluate", run_dir, reviews),
                              f"{run_dir} is being written by pid {first.pid}")
        out, err = first.communicate(timeout=TIMEOUT)
    finally:
        first.kill()
    assert first.returncode == 0, err[-3000:]
    # The run is the first command's alone: its config, its model, its metrics.
    assert not (run_dir / LOCK_FILE).exists()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["arguments"]["train"] == str(reviews)
    model = keras.saving.load_model(run_dir / "model.keras", compile=False)
    assert model.task_settings["label_names"] == config["task"]["label_names"] == ["bad", "good"]
    epochs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in epochs if r["event"] == "epoch"] == [40]


def test_a_stale_lock_is_taken_over_and_another_hosts_is_refused(kbc, classify_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(classify_run, run_dir)
    pid = _reaped_pid()
    write_lock(run_dir, pid)
    # An export into the run writes the run: it takes the lock, here a dead process's.
    result = kbc("export", run_dir, "-o", run_dir / "shared", "--format", "preset")
    assert result.code == 0, result.err[-3000:]
    assert (f"{run_dir}: took over the lock of pid {pid} on {socket.gethostname()} since "
            "2026-11-26T22:00:00+00:00 (kbc finetune --task x), which no longer runs"
            in result.err)
    assert (run_dir / "shared" / "preset").is_dir() and not (run_dir / LOCK_FILE).exists()

    write_lock(run_dir, os.getpid(), host="elsewhere")
    before = sorted(os.listdir(run_dir))
    assert_one_line_error(
        kbc("finetune", "--resume", "--run-dir", run_dir),
        f"{run_dir} is locked by pid {os.getpid()} on elsewhere since 2026-11-26T22:00:00+00:00"
        " (kbc finetune --task x), which cannot be checked from here; if that command no "
        f"longer runs, delete {run_dir / LOCK_FILE}")
    assert sorted(os.listdir(run_dir)) == before
