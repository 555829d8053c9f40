"""Every task `kbc finetune` trains, end to end: the run evaluates and predicts, and its
model.keras alone, copied out of the run, is the whole model: `kbc evaluate`, `predict` and
`export` print for the file what they print for the run, and a fresh process loads it after
`import keras_bert_core` alone and predicts on strings."""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import pytest

from keras_bert_core.cli import main
from keras_bert_core.cli.run_dir import RunDirectory
from tests.cli.conftest import DATA

TASKS = {
    "pair": (["--train", DATA / "paraphrase.tsv", "--validation", DATA / "paraphrase.tsv",
              "--text-column", "sentence1", "--pair-column", "sentence2"],
             DATA / "paraphrase.tsv", 3, "accuracy"),
    # Regression: a score per pair (as STS-B), read from a file.
    "regression": (["--regression", "--train", DATA / "similarity.tsv", "--validation",
                    DATA / "similarity.tsv", "--text-column", "sentence1", "--pair-column",
                    "sentence2", "--label-column", "score"],
                   DATA / "similarity.tsv", 3, "mean_absolute_error"),
    "squad": (["--train", DATA / "squad_v1.json", "--validation", DATA / "squad_v1.json",
               "--doc-stride", 16, "--max-query-length", 12],
              DATA / "squad_v1.json", None, "f1"),
    "ner": (["--train", DATA / "ner.conll", "--validation", DATA / "ner.conll"],
            DATA / "ner.conll", 3, "f1"),
    "choice": (["--train", DATA / "choices.jsonl", "--validation", DATA / "choices.jsonl",
                "--context-column", "context"], DATA / "choices.jsonl", 3, "accuracy"),
}


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def task_runs(tmp_path_factory, pretrain_run):
    """`run(task)`: the folder of a run of `task`, fine-tuned on first use."""
    runs = {}

    def run(task):
        if task not in runs:
            run_dir = tmp_path_factory.mktemp("runs") / task
            argv = ["finetune", "--task", "pair" if task == "regression" else task,
                    *TASKS[task][0], "--checkpoint", pretrain_run,
                    "--seq-length", 32, "--batch-size", 2, "--epochs", 1, "--run-dir", run_dir]
            # kbc sets TensorFlow's variables; its output is no test's.
            with mock.patch.dict(os.environ), contextlib.redirect_stdout(io.StringIO()):
                assert main([str(arg) for arg in argv]) == 0
            runs[task] = run_dir
        return runs[task]

    return run


def alone(run_dir, folder, name):
    """The run's model.keras copied alone into `folder` as `name`."""
    folder.mkdir(exist_ok=True)
    return shutil.copy(run_dir / "model.keras", folder / name)


@pytest.mark.slow  # a fine-tune, two evaluations, two predictions and both exports
@pytest.mark.parametrize("task", sorted(TASKS))
def test_finetune_evaluate_and_predict_every_task(kbc, task, task_runs, tmp_path):
    _, data, num_examples, metric = TASKS[task]
    run_dir = task_runs(task)
    assert metric in RunDirectory.open(run_dir).read_json("metrics.json")["validation"]

    evaluated = kbc("evaluate", run_dir, data)
    assert evaluated.code == 0, evaluated.err
    assert 0.0 <= json.loads(evaluated.out)[metric] <= 100.0

    predicted = kbc("predict", run_dir, "--input", data)
    assert predicted.code == 0, predicted.err
    answers = json_lines(predicted.out)
    if task == "squad":
        contexts = {e["context"] for a in json.loads(data.read_text())["data"]
                    for e in a["paragraphs"]}
        assert all(any(a["answer"] in c for c in contexts) for a in answers)
    else:
        assert len(answers) == num_examples
    if task == "ner":
        assert all(len(a["words"]) == len(a["tags"]) for a in answers)

    model_file = alone(run_dir, tmp_path / "alone", f"{task}.keras")
    assert kbc("evaluate", model_file, data).out == evaluated.out
    assert kbc("predict", model_file, "--input", data).out == predicted.out
    exported = kbc("export", model_file, "--output", tmp_path / "export",
                   "--tflite-variants", "float32")
    assert exported.code == 0, exported.err
    assert (tmp_path / "export" / "saved_model" / "saved_model.pb").is_file()
    assert (tmp_path / "export" / "model.tflite").is_file()
    if task in ("squad", "ner"):
        _check_tflite_answers_are_cut_from_the_text(kbc, task, data, tmp_path)


def _check_tflite_answers_are_cut_from_the_text(kbc, task, data, tmp_path):
    """A .tflite file gives byte offsets; `kbc predict` cuts the strings from the text."""
    if task == "squad":
        requests = [{"question": qa["question"], "context": paragraph["context"]}
                    for article in json.loads(data.read_text())["data"]
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]][:3]
    else:
        sentences = [s for s in data.read_text().strip().split("\n\n")
                     if not s.startswith("-DOCSTART-")][:3]
        requests = [{"text": " ".join(line.split()[0] for line in sentence.splitlines())}
                    for sentence in sentences]
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    predicted = kbc("predict", tmp_path / "export" / "model.tflite", "--input", path)
    assert predicted.code == 0, predicted.err
    answers = json_lines(predicted.out)
    assert len(answers) == len(requests)
    for request, answer in zip(requests, answers, strict=True):
        if task == "squad":
            context = request["context"].encode()
            assert answer["answer"] == context[
                answer["answer_start"]:answer["answer_end"]].decode()
            assert answer["answer"] and answer["answer"] in request["context"]
        else:
            # BERT's words: punctuation stands alone.
            assert [w for w in answer["words"] if w] == re.findall(r"\w+|[^\w\s]",
                                                                  request["text"])


# What the fresh process asks each file, and the shape of what it answers.
FRESH_PROCESS = r"""
import json, pathlib, re, sys

import keras_bert_core

assert "tensorflow" not in sys.modules, "import keras_bert_core alone loads TensorFlow"
import keras

from keras_bert_core.tasks.fine_tuning import task_of
from keras_bert_core.tasks.multiple_choice import MultipleChoiceData
from keras_bert_core.tasks.question_answering import SquadExample

folder = pathlib.Path(sys.argv[1])
registered = re.compile(r"register_keras_serializable\([^)]*\)\s*\nclass (\w+)")
package = pathlib.Path(keras_bert_core.__file__).parent
names = {name for path in package.rglob("*.py")
         for name in registered.findall(path.read_text(encoding="utf-8"))}
missing = sorted(name for name in names
                 if keras.saving.get_registered_object(f"keras_bert_core>{name}") is None)
assert not missing, f"not registered after import keras_bert_core: {missing}"
questions = {
    "classify.keras": ["A warm, funny film.", "The plot drags."],
    "regression.keras": (["The cat sat.", "It rained."], ["A cat was sitting.", "The sun shone."]),
    "pair.keras": (["The cat sat.", "It rained."], ["A cat was sitting.", "The sun shone."]),
    "squad.keras": (["Who wrote it?"], ["Ada wrote it in London."]),
    "ner.keras": ["EU rejects German call", "Peter Blackburn"],
    "choice.keras": (["Ada opened the fridge."], [["the milk.", "the moon.", "a river."]]),
}
shapes = {}
for name, text in questions.items():
    model = keras.saving.load_model(folder / name)
    outputs = model.predict(text, verbose=0)
    shapes[name] = {key: list(value.shape) for key, value in outputs.items()} \
        if isinstance(outputs, dict) else list(outputs.shape)
    # Answers, from the settings the file carries (no run folder).
    task = task_of(model)
    if name == "squad.keras":
        data = [SquadExample("q", text[0][0], text[1][0])]
    elif name == "choice.keras":
        data = MultipleChoiceData(["She took out"], text[1], None, text[0])
    else:
        data = task.from_lines(text if isinstance(text, list) else
                               [f"{a}	{b}" for a, b in zip(*text)])
    shapes[name + " answers"] = task.predict(model, data)
print(json.dumps(shapes))
"""


def test_a_fresh_process_loads_every_task_model_after_import_keras_bert_core(
        task_runs, classify_run, tmp_path):
    folder = tmp_path / "models"
    for task in TASKS:
        alone(task_runs(task), folder, f"{task}.keras")
    alone(classify_run, folder, "classify.keras")
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(folder)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    shapes = json.loads(result.stdout.strip().splitlines()[-1])
    assert shapes["classify.keras"] == [2, 3] and shapes["regression.keras"] == [2, 1]
    assert shapes["pair.keras"] == [2, 2] and shapes["choice.keras"] == [1, 3]
    assert shapes["squad.keras"] == {"start_logits": [1, 32], "end_logits": [1, 32]}
    assert shapes["ner.keras"][:2] == [2, 32]
    answers = shapes["classify.keras answers"]
    assert [a["label"] in ("negative", "neutral", "positive") for a in answers] == [True] * 2
    assert isinstance(shapes["regression.keras answers"][0]["score"], float)
    assert len(shapes["pair.keras answers"]) == 2
    assert shapes["squad.keras answers"][0]["answer"] in "Ada wrote it in London."
    assert [len(a["tags"]) for a in shapes["ner.keras answers"]] == [4, 2]
    assert shapes["choice.keras answers"][0]["choice"] in ("the milk.", "the moon.", "a river.")
