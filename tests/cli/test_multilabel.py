"""`kbc finetune --task multilabel` on a non-BERT family (DistilBERT: no pooler, its own
head): it learns label sets, tunes its thresholds on the validation data, `evaluate` reports
micro and macro F1 and each label's precision and recall, and `predict` answers label sets,
the same from the run, from its `.keras` file copied out, from its preset and from its
SavedModel (`kbc export`; both exports in Python: tests/tasks/test_multilabel.py)."""

import json
import random
import shutil

import keras
import pytest

from tests.cli.conftest import assert_one_line_error
from tests.cli.test_families import WORDS, family, json_lines

# A marker word anywhere in the text gives its label; a text has none, one or several.
MARKERS = {"good": "praise", "bad": "complaint", "quick": "speed"}


def _rows(count, seed):
    rng = random.Random(seed)
    plain = [word for word in WORDS if word not in MARKERS]
    rows = []
    for _ in range(count):
        markers = [word for word in MARKERS if rng.random() < 0.35]
        words = rng.choices(plain, k=4) + markers
        rng.shuffle(words)
        rows.append((" ".join(words), sorted(MARKERS[word] for word in markers)))
    return rows


@pytest.fixture(scope="module")
def labeled(tmp_path_factory):
    """Training rows (CSV, labels joined by "|") and validation rows (JSON lines, lists)."""
    folder = tmp_path_factory.mktemp("multilabel")
    train = folder / "train.csv"
    train.write_text("text,topics\n" + "".join(
        f"{text},{'|'.join(labels)}\n" for text, labels in _rows(160, 0)))
    validation = folder / "validation.jsonl"
    validation.write_text("".join(json.dumps({"text": text, "topics": labels}) + "\n"
                                  for text, labels in _rows(32, 1)))
    return train, validation


def test_finetune_evaluates_and_predicts_label_sets(kbc, labeled, tmp_path):
    train, validation = labeled
    run_dir = tmp_path / "run"
    trained = kbc("finetune", "--task", "multilabel", "--train", train, "--validation",
                  validation, "--label-column", "topics", "--label-delimiter", "|",
                  "--checkpoint", family("distilbert"), "--seq-length", 16, "--batch-size", 8,
                  "--epochs", 6, "--learning-rate", 3e-3, "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    model = keras.saving.load_model(run_dir / "model.keras")
    assert type(model).__name__ == "BertMultiLabelClassifier"
    assert model.encoder.config.family == "distilbert"
    assert model.task_settings["label_names"] == ["complaint", "praise", "speed"]
    assert len(model.thresholds) == 3 and model.thresholds != [0.5] * 3  # tuned

    evaluated = kbc("evaluate", run_dir, validation)
    assert evaluated.code == 0, evaluated.err
    scores = json.loads(evaluated.out)
    assert scores["micro_f1"] >= 0.8 and scores["macro_f1"] >= 0.7, scores
    assert set(scores["labels"]["speed"]) == {"precision", "recall", "f1", "support"}

    texts = tmp_path / "texts.txt"
    texts.write_text("the good dog and quick cat\nold red bad house city\nthe blue table\n")
    from_run = kbc("predict", run_dir, "--input", texts)
    assert from_run.code == 0, from_run.err
    answers = json_lines(from_run.out)
    assert [sorted(a["labels"]) for a in answers] == [["praise", "speed"], ["complaint"], []]
    assert set(answers[0]["probabilities"]) == {"complaint", "praise", "speed"}
    copied = tmp_path / "elsewhere.keras"
    shutil.copy(run_dir / "model.keras", copied)
    from_file = kbc("predict", copied, "--input", texts)
    assert from_file.code == 0 and from_file.out == from_run.out

    # Exported: a preset answers as the run; both exports serve the same label sets.
    output = tmp_path / "export"
    exported = kbc("export", run_dir, "-o", output, "--format", "saved_model", "preset")
    assert exported.code == 0, exported.err
    from_preset = kbc("predict", output / "preset", "--input", texts)
    assert from_preset.code == 0 and from_preset.out == from_run.out, from_preset.err
    served = kbc("predict", output / "saved_model", "--input", texts)
    assert served.code == 0, served.err
    for answer, run_answer in zip(json_lines(served.out), answers, strict=True):
        assert sorted(name for name in answer["label_names"] if name) == sorted(
            run_answer["labels"])
        assert answer["probabilities"] == pytest.approx(
            [run_answer["probabilities"][name] for name in ("complaint", "praise", "speed")],
            abs=1e-4)


def test_a_label_list_of_numbers_in_jsonl_is_one_line(kbc, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a b", "label": ["x"]}\n{"text": "c", "label": [{"x": 1}]}\n')
    result = kbc("finetune", "--task", "multilabel", "--train", bad, "--checkpoint",
                 family("distilbert"), "--run-dir", tmp_path / "run")
    assert_one_line_error(result, "bad.jsonl", "line 2", "a label must be text")
