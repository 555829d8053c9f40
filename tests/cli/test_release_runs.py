"""Runs, a preset and a .keras file written by release 0.1.0 (tests/cli/data/release_0_1_0, made by
make_release_fixtures.py) still evaluate, predict and export as that release did."""

import json
import math
import pathlib
import shutil

import keras
import numpy as np
import pytest

from tests.cli.make_release_fixtures import EXPORT_TEXTS, KERAS_FILE, OUTPUT, PRESET, RUNS


def same(answer, expected):
    """Equal JSON values, floats to 1e-5 (the release printed them from the same weights)."""
    if isinstance(expected, float):
        return isinstance(answer, (int, float)) and math.isclose(answer, expected,
                                                                 rel_tol=1e-5, abs_tol=1e-6)
    if isinstance(expected, dict):
        return (isinstance(answer, dict) and answer.keys() == expected.keys()
                and all(same(answer[key], expected[key]) for key in expected))
    if isinstance(expected, list):
        return (isinstance(answer, list) and len(answer) == len(expected)
                and all(same(a, e) for a, e in zip(answer, expected, strict=True)))
    return answer == expected


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_release_run_evaluates_and_predicts_as_it_did(kbc, name, tmp_path):
    run = tmp_path / name  # a copy: nothing may write into the fixture
    shutil.copytree(OUTPUT / name, run)
    _, labeled, inputs = RUNS[name]
    evaluated = kbc("evaluate", run, labeled)
    assert evaluated.code == 0, evaluated.err
    expected = json.loads((OUTPUT / f"{name}.evaluate.json").read_text())
    assert same(json.loads(evaluated.out), expected), evaluated.out
    predicted = kbc("predict", run, "--input", inputs)
    assert predicted.code == 0, predicted.err
    expected = json_lines((OUTPUT / f"{name}.predict.jsonl").read_text())
    assert same(json_lines(predicted.out), expected), predicted.out


def test_release_run_exports_as_it_did(kbc, tmp_path):
    run = tmp_path / "classify"
    shutil.copytree(OUTPUT / "classify", run)
    exported = kbc("export", run, "--output", tmp_path / "export", "--format", "saved_model")
    assert exported.code == 0, exported.err
    texts = tmp_path / "texts.txt"
    texts.write_text(EXPORT_TEXTS)
    predicted = kbc("predict", tmp_path / "export" / "saved_model", "--input", texts)
    assert predicted.code == 0, predicted.err
    expected = json_lines((OUTPUT / "classify.export.predict.jsonl").read_text())
    assert same(json_lines(predicted.out), expected), predicted.out
    assert pathlib.Path(tmp_path / "export" / "saved_model" / "assets" / "vocab.txt").is_file()


def test_release_preset_predicts_as_it_did(kbc, tmp_path):
    preset = tmp_path / "preset"
    shutil.copytree(PRESET, preset)
    predicted = kbc("predict", preset, "--input", RUNS["classify"][2])
    assert predicted.code == 0, predicted.err
    expected = json_lines((OUTPUT / "classify_preset.predict.jsonl").read_text())
    assert same(json_lines(predicted.out), expected), predicted.out
    # and as the run it was made of
    assert expected == json_lines((OUTPUT / "classify.predict.jsonl").read_text())


def test_release_keras_file_takes_text_as_it_did(tmp_path):
    path = shutil.copy(KERAS_FILE, tmp_path / "model.keras")
    expected = json.loads((OUTPUT / "text_classifier.json").read_text())
    logits = keras.saving.load_model(path).predict(expected["texts"], verbose=0)
    np.testing.assert_allclose(logits, expected["logits"], rtol=1e-4, atol=1e-7)
