"""`kbc distill`: a fine-tuned run distilled into a smaller student whose run directory the
other commands take, the comparison it writes, and its errors as one line.

The teacher is a run directory written as `kbc finetune` writes one (`RunDirectory`), of an
untrained tiny classifier: these tests check the command's wiring, not what it learns
(tests/models/test_distiller.py does)."""

import argparse
import dataclasses
import json
import os
import random

import keras
import pytest

import keras_bert_core as kbc_package
from keras_bert_core.cli.comparison import export_requests
from keras_bert_core.cli.run_dir import RunDirectory
from keras_bert_core.tasks.fine_tuning import TASKS
from keras_bert_core.training import completed_steps
from tests.cli.conftest import DATA, TINY_CONFIG, VOCAB
from tests.cli.test_training_reliability import kill_at_step, metrics_steps

STUDENT_CONFIG = {**TINY_CONFIG, "hidden_size": 16, "intermediate_size": 32}
LABELS = ["negative", "neutral", "positive"]  # sentiment.csv's


def write_run(path, command, model=None, task=None):
    """A run directory as `kbc <command>` writes it."""
    run = RunDirectory.create(str(path))
    tokens = VOCAB.read_text().splitlines()
    config = kbc_package.BertConfig.from_dict({**TINY_CONFIG, "vocab_size": len(tokens)})
    run.write_config(argparse.Namespace(command=command), config, task)
    run.write_vocab(tokens)
    if model is not None:
        run.save_model(model(kbc_package.BertEncoder(config)))
    return path


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory):
    """The teacher's run (read it, never write it), the same whichever test makes it."""
    keras.utils.set_random_seed(0)
    task = {"name": "classify", "text_column": "review", "seq_length": 32,
            "lower_case": True, "label_names": LABELS}
    return write_run(tmp_path_factory.mktemp("teacher") / "run", "finetune",
                     lambda encoder: kbc_package.BertClassifier(encoder, len(LABELS)), task)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if ": error: " in line]


@pytest.mark.slow
def test_distilled_student_is_a_run_that_evaluate_and_predict_take(kbc, teacher_run, tmp_path):
    config = tmp_path / "student.json"
    config.write_text(json.dumps(STUDENT_CONFIG))
    unlabeled = tmp_path / "unlabeled.txt"
    unlabeled.write_text("A superb film.\nThe plot drags on.\nWarm and funny.\nNot worth it.\n")
    run_dir = tmp_path / "student"
    result = kbc("distill", "--teacher", teacher_run, "--student", config,
                 "--train", DATA / "sentiment.csv", "--unlabeled", unlabeled,
                 "--hidden-weight", 1.0, "--attention-weight", 1.0, "--batch-size", 2,
                 "--epochs", 1, "--run-dir", run_dir)
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == str(run_dir)
    assert "parameters" in result.out and "accuracy" in result.out
    for name in ("config.json", "vocab.txt", "model.keras", "metrics.json", "comparison.json",
                 "curves.png"):
        assert (run_dir / name).is_file(), name
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["command"] == "distill" and saved["model_config"]["hidden_size"] == 16
    assert saved["task"]["label_names"] == LABELS and saved["task"]["seq_length"] == 32
    train = json.loads((run_dir / "metrics.json").read_text())["train"]
    assert {"loss", "hard_loss", "soft_loss", "hidden_loss", "attention_loss"} <= set(train)
    comparison = json.loads((run_dir / "comparison.json").read_text())
    teacher, student = comparison["teacher"], comparison["student"]
    assert student["parameters"] < teacher["parameters"]
    assert student["weight_bytes"] < teacher["weight_bytes"]
    assert student["file_bytes"] < teacher["file_bytes"]
    assert 0.0 <= student["metrics"]["accuracy"] <= 1.0
    assert teacher["keras_ms_per_text"] > 0
    # Both exported, each format timed one text per call; the smaller model's files are.
    for kind in ("saved_model", "tflite"):
        assert 0 < student["export_bytes"][kind] < teacher["export_bytes"][kind], kind
        assert teacher["export_ms_per_text"][kind] > 0 and student["export_ms_per_text"][kind] > 0
    assert "TFLite ms per text" in result.out and "SavedModel bytes" in result.out

    evaluated = kbc("evaluate", run_dir, DATA / "sentiment.csv")
    assert evaluated.code == 0, evaluated.err
    assert json.loads(evaluated.out)["accuracy"] == student["metrics"]["accuracy"]
    predicted = kbc("predict", run_dir, "-i", unlabeled)
    assert predicted.code == 0, predicted.err
    answers = [json.loads(line) for line in predicted.out.splitlines()]
    assert len(answers) == 4 and answers[0]["label"] in LABELS


def test_a_teacher_that_is_not_a_fine_tuned_model_is_one_line(kbc, tmp_path):
    pretrain_run = write_run(tmp_path / "pretrain", "pretrain")
    code, _, stderr = dataclasses.astuple(kbc(
        "distill", "--teacher", pretrain_run, "--train", DATA / "sentiment.csv",
        "--run-dir", tmp_path / "run"))
    assert code == 2
    assert error_lines(stderr) == [
        f"kbc distill: error: --teacher: {pretrain_run} is a `kbc pretrain` run, not a "
        "fine-tuned model"], stderr
    assert "Traceback" not in stderr and not (tmp_path / "run").exists()


def test_a_student_with_another_vocabulary_is_one_line(kbc, teacher_run, tmp_path):
    folder = tmp_path / "other"
    folder.mkdir()
    tokens = VOCAB.read_text().splitlines()
    (folder / "vocab.txt").write_text("\n".join(tokens[:-1] + ["zebra"]) + "\n")
    config = kbc_package.BertConfig.from_dict({**TINY_CONFIG, "vocab_size": len(tokens)})
    kbc_package.BertEncoder(config).save(str(folder / "encoder.keras"))
    code, _, stderr = dataclasses.astuple(kbc(
        "distill", "--teacher", teacher_run, "--student", folder / "encoder.keras",
        "--train", DATA / "sentiment.csv", "--run-dir", tmp_path / "run"))
    assert code == 2
    lines = error_lines(stderr)
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("kbc distill: error: teacher and student vocabularies differ")
    assert f"first difference at id {len(tokens) - 1}: " in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_distill_killed_mid_run_resumes_from_another_folder(kbc, teacher_run, tmp_path):
    """Relative paths are stored absolute, so `--resume` works from any folder; the resumed
    run trains each remaining step once and writes the comparison."""
    rng = random.Random(0)
    words = [w for w in VOCAB.read_text().split() if w.isalpha()]
    rows = [f"{' '.join(rng.choices(words, k=6))},{rng.choice(LABELS)}" for _ in range(200)]
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.csv").write_text("review,label\n" + "\n".join(rows) + "\n")
    (work / "student.json").write_text(json.dumps(STUDENT_CONFIG))
    argv = ("distill", "--teacher", os.path.relpath(teacher_run, work), "--student",
            "student.json", "--train", "train.csv", "--batch-size", 4, "--epochs", 3,
            "--backup-every", 20, "--no-export-latency", "--run-dir", "run")
    run_dir = work / "run"
    killed_at = kill_at_step(argv, run_dir, 60, cwd=work)
    backed_up = completed_steps(str(run_dir))
    assert 0 <= killed_at - backed_up <= 20 and not (run_dir / "model.keras").exists()
    arguments = json.loads((run_dir / "config.json").read_text())["arguments"]
    assert arguments["teacher"] == str(teacher_run)
    assert arguments["student"] == str(work / "student.json")
    assert arguments["train"] == str(work / "train.csv")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = kbc("distill", "--resume", "--run-dir", run_dir, cwd=elsewhere)
    assert resumed.code == 0, resumed.err[-3000:]
    steps, epochs = metrics_steps(run_dir)
    assert steps == [50, 100, 150]
    assert epochs == [(1, 50), (2, 100), (3, 150)]
    comparison = json.loads((run_dir / "comparison.json").read_text())
    assert comparison["student"]["parameters"] < comparison["teacher"]["parameters"]
    assert "export_bytes" not in comparison["student"]  # --no-export-latency, kept


def test_distill_without_a_teacher_is_one_line(kbc, tmp_path):
    code, _, stderr = dataclasses.astuple(kbc("distill", "--train", DATA / "sentiment.csv",
                                              "--run-dir", tmp_path / "run"))
    assert code == 2
    assert error_lines(stderr) == [
        "kbc distill: error: the following arguments are required: --teacher (or --resume "
        "--run-dir RUN to continue a run)"], stderr
    assert not (tmp_path / "run").exists()


def test_export_requests_are_each_tasks_signature_inputs():
    from keras_bert_core.tasks.classification import TextClassificationData
    from keras_bert_core.tasks.multiple_choice import MultipleChoiceData
    from keras_bert_core.tasks.question_answering import SquadExample
    from keras_bert_core.tasks.token_classification import TaggingData

    def task(name):
        return TASKS[name]({"seq_length": 16})

    single = TextClassificationData(["a", "b", "c"], None, None, None)
    assert export_requests(task("classify"), single, 2) == [{"text": "a"}, {"text": "b"}]
    pairs = TextClassificationData(["a", "b"], ["x", "y"], None, None)
    assert export_requests(task("pair"), pairs) == [{"text_a": "a", "text_b": "x"},
                                                    {"text_a": "b", "text_b": "y"}]
    tagging = TaggingData([["New", "York"], ["Hi"]], None, ["O"])
    assert export_requests(task("ner"), tagging, 1) == [{"text": "New York"}]
    squad = [SquadExample("1", "Who?", "Ann ran.", ["Ann"], [0])]
    assert export_requests(task("squad"), squad) == [{"question": "Who?",
                                                      "context": "Ann ran."}]
    choice = MultipleChoiceData(["Pick"], [("a", "b")], None)
    assert export_requests(task("choice"), choice) == [{"text": "Pick", "choices": ["a", "b"]}]
