"""`kbc pretrain`, `kbc finetune` and `kbc distill --strategy multi_worker`: two workers on
localhost run the same command into one run directory, as on hosts that share storage."""

import json
import os

import keras
import pytest

from keras_bert_core.models import BertClassifier
from tests.cli.conftest import DATA, VOCAB
from tests.training.toys import cluster_environments, read_output, run_module

RUN_FILES = {"config.json", "vocab.txt", "tokenizer_config.json", "model.keras", "metrics.json",
             "metrics.jsonl", "curves.png", "checkpoints", "logs", "backup"}


def run_workers(*argv):
    """Runs `kbc ARGS... --strategy multi_worker` as two workers; returns their outputs."""
    processes = [run_module("keras_bert_core.cli", *argv, "--strategy", "multi_worker", env=env)
                 for env in cluster_environments(2)]
    return [read_output(process) for process in processes]


@pytest.mark.slow
def test_two_workers_pretrain_then_finetune_and_only_the_chief_writes(
        tmp_path, corpus, tiny_config):
    pretrain_dir = tmp_path / "pretrain"
    chief, worker = run_workers(
        "pretrain", corpus, "--vocab", VOCAB, "--config", tiny_config, "--seq-length", 32,
        "--batch-size", 4, "--epochs", 2, "--steps-per-epoch", 2, "--run-dir", pretrain_dir)
    assert "pretrained" in chief and "pretrained" not in worker
    assert set(os.listdir(pretrain_dir)) == RUN_FILES
    assert sorted(os.listdir(pretrain_dir / "backup")) == ["worker_0", "worker_1"]
    assert json.loads((pretrain_dir / "metrics.json").read_text())["step"] == 4

    # --overwrite: the chief replaces the old folder; the other worker leaves it alone.
    finetune_dir = tmp_path / "finetune"
    finetune_dir.mkdir()
    (finetune_dir / "config.json").write_text("{}")  # an earlier run's (only runs are replaced)
    (finetune_dir / "old.txt").write_text("from an earlier run\n")
    run_workers(
        "finetune", "--task", "classify", "--train", DATA / "sentiment.csv", "--validation",
        DATA / "sentiment.csv", "--text-column", "review", "--checkpoint", pretrain_dir,
        "--seq-length", 32, "--batch-size", 2, "--epochs", 1, "--run-dir", finetune_dir,
        "--overwrite")
    assert set(os.listdir(finetune_dir)) == RUN_FILES
    metrics = json.loads((finetune_dir / "metrics.json").read_text())
    assert 0.0 <= metrics["validation"]["accuracy"] <= 1.0
    model = keras.saving.load_model(finetune_dir / "model.keras", compile=False)
    assert isinstance(model, BertClassifier)

    # Distillation: the teacher runs in each worker's step, on that worker's batches.
    unlabeled = tmp_path / "unlabeled.txt"
    unlabeled.write_text("A superb film.\nThe plot drags on.\nWarm and funny.\nDull.\n")
    distill_dir = tmp_path / "distill"
    chief, worker = run_workers(
        "distill", "--teacher", finetune_dir, "--train", DATA / "sentiment.csv",
        "--text-column", "review", "--unlabeled", unlabeled, "--batch-size", 2, "--epochs", 1,
        "--no-export-latency", "--run-dir", distill_dir)
    assert str(distill_dir) in chief and str(distill_dir) not in worker
    assert RUN_FILES | {"comparison.json"} <= set(os.listdir(distill_dir))
    comparison = json.loads((distill_dir / "comparison.json").read_text())
    for name in ("teacher", "student"):  # compared by the chief alone, after training
        assert 0.0 <= comparison[name]["metrics"]["accuracy"] <= 1.0
    student = keras.saving.load_model(distill_dir / "model.keras", compile=False)
    assert isinstance(student, BertClassifier)


def test_multi_worker_without_a_run_directory_says_what_to_pass(kbc, corpus):
    result = kbc("pretrain", corpus, "--vocab", VOCAB, "--strategy", "multi_worker")
    assert result.code == 2
    assert "--strategy multi_worker needs --run-dir" in result.err
