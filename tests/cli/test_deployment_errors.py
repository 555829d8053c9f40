"""`kbc export` and `kbc predict` at the deployment end: exports serve and broken exports get
one line, each in a new process (an import this test process made, tensorflow_text's among
them, would hide a missing one); bad input and options get one line, and --overwrite never
replaces an input."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.cli.conftest import Result
from tests.cli.test_errors import assert_user_error


def kbc_process(*argv, stdin=b"", cwd=None):
    """Runs `kbc ARGS...` in a new Python process; stdin is given as bytes."""
    completed = subprocess.run(
        [sys.executable, "-m", "keras_bert_core.cli", *map(str, argv)], input=stdin,
        capture_output=True, cwd=cwd, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return Result(completed.returncode, completed.stdout.decode(),
                  completed.stderr.decode(errors="replace"))


@pytest.mark.parametrize("model", ["saved_model", "model.tflite"])
def test_predict_serves_an_export_in_a_new_process(classify_export, model):
    predicted = kbc_process("predict", classify_export / model, stdin=b"good film\n")
    assert predicted.code == 0, predicted.err
    [answer] = [json.loads(line) for line in predicted.out.splitlines()]
    assert answer["label_name"] in ("negative", "neutral", "positive")


@pytest.mark.parametrize("stdin, message", [
    (b"", "standard input is empty"),
    (b" \n\n", "standard input is empty"),
    (b"good film\nbad \xff film\n", "standard input is not UTF-8 text (line 2: byte 0xff)"),
])
def test_bad_standard_input(kbc, classify_export, stdin, message):
    assert_user_error(kbc("predict", classify_export / "model.tflite", stdin=stdin),
                      "kbc predict: error: ", message)


@pytest.mark.parametrize("model", ["saved_model", "model.tflite"])
@pytest.mark.parametrize("stdin, message", [
    # Were a ValueError traceback from tf.constant or LiteRT's SetTensor.
    (b'{"text": 5}\n', "input line 1: 'text' must be a string, got 5"),
    (b'good film\n{"text": null}\n', "input line 2: 'text' must be a string, got null"),
    # Blank lines are skipped, and counted: the number is the file's (was 2).
    (b"good film\n\n\nbad\tfilm\n", "input line 4: expected 1 tab-separated field(s)"),
])
def test_bad_export_input_lines(kbc, classify_export, model, stdin, message):
    assert_user_error(kbc("predict", classify_export / model, stdin=stdin),
                      "kbc predict: error: ", message)


def test_choices_must_be_a_list_of_the_models_number(tmp_path):
    from keras_bert_core.cli import UserError
    from keras_bert_core.cli.predict import read_requests

    lines = tmp_path / "choices.jsonl"
    for line, message in [
            ('{"text": "The cat", "choices": ["sat", "ran"]}', 'got ["sat", "ran"]'),
            ("The cat\tsat", 'got "sat"')]:  # a plain line cannot hold a list
        lines.write_text(line + "\n")
        with pytest.raises(UserError, match="input line 1: 'choices' must be a JSON list of 3 "
                                            "strings .*" + re.escape(message)):
            read_requests(str(lines), ["text", "choices"], 3)
    lines.write_text('{"text": "The cat", "choices": ["sat", "ran", "flew"]}\n')
    assert read_requests(str(lines), ["text", "choices"], 3)[0]["choices"][2] == "flew"


@pytest.mark.parametrize("model", ["saved_model", "model.tflite"])
def test_run_options_on_an_export_are_refused(kbc, classify_export, model):
    # The export answers as it was exported: a --null-score-threshold here would be ignored.
    assert_user_error(kbc("predict", classify_export / model, "--null-score-threshold", "2",
                          "--text-column", "review", stdin=b"good film\n"),
                      "--text-column, --null-score-threshold: ", "is an export")


def test_predict_on_a_tf_serving_base_path_names_its_versions(kbc, classify_export, tmp_path):
    # `kbc export --name classifier` writes <output>/classifier/1: the folder TF Serving's
    # base_path names was "not a kbc fine-tuning run".
    for version in ("1", "10", "2"):
        shutil.copytree(classify_export / "saved_model", tmp_path / "classifier" / version)
    assert_user_error(kbc("predict", tmp_path / "classifier", stdin=b"good film\n"),
                      "holds TF Serving versions (1, 2, 10) of a SavedModel: give one, e.g. "
                      f"{tmp_path / 'classifier' / '10'}")


def test_binary_input_file(kbc, classify_export):
    binary = classify_export / "model.tflite"  # a flatbuffer: not UTF-8
    assert_user_error(kbc("predict", classify_export / "saved_model", "-i", binary),
                      f"{binary} is not UTF-8 text")


def test_truncated_tflite_file(classify_export, tmp_path):
    truncated = tmp_path / "model.tflite"
    truncated.write_bytes((classify_export / "model.tflite").read_bytes()[:100_000])
    assert_user_error(kbc_process("predict", truncated, stdin=b"good film\n"),
                      f"{truncated} is not a complete .tflite file")


@pytest.mark.parametrize("damage", ["truncated saved_model.pb", "truncated variables"])
def test_truncated_saved_model(classify_export, tmp_path, damage):
    copy = shutil.copytree(classify_export / "saved_model", tmp_path / "saved_model")
    if damage == "truncated saved_model.pb":
        damaged = copy / "saved_model.pb"
    else:
        [damaged] = (copy / "variables").glob("variables.data-*")
    damaged.write_bytes(damaged.read_bytes()[:1000])
    assert_user_error(kbc_process("predict", copy, stdin=b"good film\n"),
                      f"{copy} is not a complete SavedModel")


@pytest.mark.slow  # an export and two predictions, the last in a new process
def test_predictions_over_the_export_batch_limit(kbc, classify_run, tmp_path):
    output = tmp_path / "export"
    exported = kbc("export", classify_run, "-o", output, "--format", "saved_model",
                   "--max-batch-size", 2)
    assert exported.code == 0, exported.err
    texts = tmp_path / "texts.txt"
    texts.write_text("good\nbad\nfine\n")
    assert_user_error(kbc("predict", output / "saved_model", "-i", texts),
                      "a request holds at most 2 rows", "--batch-size")
    predicted = kbc_process("predict", output / "saved_model", "-i", texts, "--batch-size", 2)
    assert predicted.code == 0, predicted.err
    assert len(predicted.out.splitlines()) == 3


@pytest.mark.parametrize("name", ["../../outside", "ABSOLUTE", "..", "."])
def test_export_names_are_one_folder_name(kbc, classify_run, tmp_path, name):
    name = str(tmp_path / "outside") if name == "ABSOLUTE" else name
    result = kbc("export", classify_run, "-o", tmp_path / "export", "--name", name)
    assert_user_error(result, "the model name must be one folder name", repr(name))
    assert os.listdir(tmp_path) == []
    assert not (tmp_path.parent / "outside").exists()


@pytest.mark.parametrize("model, output, how", [
    ("", "", "is the input"),
    ("model.keras", "", "contains the input"),
    ("", "..", "contains the input"),
])
def test_overwrite_never_replaces_the_run_it_exports(kbc, classify_run, model, output, how):
    before = sorted(os.listdir(classify_run))
    result = kbc("export", classify_run / model, "-o", classify_run / output, "--overwrite")
    assert_user_error(result, how)
    assert sorted(os.listdir(classify_run)) == before


def test_overwrite_never_truncates_the_input_it_predicts(kbc, classify_export, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("good film\nbad film\n")
    result = kbc("predict", classify_export / "model.tflite", "-i", texts, "-o", texts,
                 "--overwrite")
    assert_user_error(result, f"the output {texts} is the input {texts}")
    assert texts.read_text() == "good film\nbad film\n"


def test_predictions_file_appears_only_when_complete(kbc, classify_export, tmp_path, monkeypatch):
    texts = tmp_path / "texts.txt"
    texts.write_text("good film\nbad film\n")
    output = tmp_path / "answers.jsonl"
    output.write_text("old answers\n")

    def failing_answers(args):
        yield {"label": 0}
        raise RuntimeError("killed")

    monkeypatch.setattr("keras_bert_core.cli.predict.answers", failing_answers)
    with pytest.raises(RuntimeError, match="killed"):
        kbc("predict", classify_export / "model.tflite", "-i", texts, "-o", output, "--overwrite")
    assert output.read_text() == "old answers\n"
    assert sorted(os.listdir(tmp_path)) == ["answers.jsonl", "texts.txt"]


@pytest.mark.parametrize("options, message", [
    (("--format", "saved_model", "--tflite-fixed-shape"), "--tflite-fixed-shape needs --format "
                                                          "tflite"),
    (("--format", "preset", "--name", "sentiment"), "--name needs --format saved_model"),
    (("--format", "tflite", "--max-batch-size", 8), "--max-batch-size needs --format "
                                                    "saved_model"),
    (("--format", "preset", "--max-text-bytes", 100), "--max-text-bytes needs --format "
                                                      "saved_model or tflite"),
    (("--format", "saved_model", "--tflite-variants", "dynamic"), "--tflite-variants needs "
                                                                  "--format tflite"),
])
def test_options_for_an_export_not_written_are_refused(kbc, classify_run, tmp_path, options,
                                                       message):
    # They were ignored without a word (--tflite-variants was already refused).
    result = kbc("export", classify_run, "-o", tmp_path / "export", *options)
    assert_user_error(result, message)
    assert os.listdir(tmp_path) == []


def test_negative_export_limits_are_refused_by_the_parser(kbc, classify_run, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # was "max_batch_size must be ...", a
        kbc("export", classify_run, "-o", tmp_path / "export", "--max-batch-size", -1)
    assert exit_info.value.code == 2
    assert "argument --max-batch-size: -1 is less than 0" in capsys.readouterr().err
