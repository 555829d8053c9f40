"""`kbc demo --quick`: the whole path on the stdlib docstrings, shrunk to a smoke test."""

import json

import pytest

from keras_bert_core.cli.demo_corpus import TOPICS
from keras_bert_core.cli.run_dir import RunDirectory


@pytest.mark.slow
def test_demo_quick_runs_every_stage_and_reports_it(kbc, tmp_path):
    run_dir = tmp_path / "demo"
    result = kbc("demo", "--quick", "--run-dir", run_dir, "--vocab-size", 800,
                 "--steps-per-epoch", 4, "--train-examples", 96, "--held-out-examples", 32,
                 "--latency-texts", 3)
    assert result.code == 0, result.err
    for row in ("kbc demo:", "pretraining", "held-out accuracy", "majority baseline",
                "export sizes", "TFLite vs Keras", "latency per text", "distillation",
                "student TFLite vs Keras"):
        assert row in result.out

    summary = RunDirectory(run_dir).read_json("summary.json")
    assert summary["vocabulary_size"] <= 800
    assert summary["pretraining"]["steps"] == 8
    assert summary["finetuning"]["held_out_examples"] == 32
    assert 0.0 < summary["finetuning"]["majority_baseline"] <= 1.0
    assert summary["agreement"]["saved_model"]["label_agreement"] == 1.0
    assert summary["agreement"]["saved_model"]["max_abs_probability_diff"] < 1e-4
    # The TFLite tokenizer gives the reference's ids: the same labels.
    assert summary["agreement"]["tflite"]["label_agreement"] == 1.0
    assert set(summary["latency_ms"]) == {"keras", "saved_model", "tflite"}
    assert all(size > 0 for size in summary["export_bytes"].values())
    # The distillation step: a 1-layer student of the 2-layer classifier, a run of its own,
    # exported, its TFLite file answering as its Keras model does.
    distilled = summary["distillation"]
    assert distilled["parameters"]["student"] < distilled["parameters"]["teacher"]
    assert 0.0 <= distilled["held_out_accuracy"] <= 1.0
    assert distilled["tflite_agreement"]["label_agreement"] == 1.0
    assert distilled["export_bytes"]["tflite"] < summary["export_bytes"]["tflite"]
    assert all(ms > 0 for ms in distilled["tflite_ms"].values())
    assert (run_dir / "student_export" / "model.tflite").is_file()
    assert (run_dir / "student_export" / "saved_model" / "saved_model.pb").is_file()
    student_run = RunDirectory(run_dir / "distill")
    assert student_run.config()["model_config"]["num_layers"] == 1
    assert student_run.read_json("metrics.json")["validation"]["accuracy"] == \
        distilled["held_out_accuracy"]
    for image in ("pretraining.png", "finetuning.png"):
        assert (run_dir / image).read_bytes().startswith(b"\x89PNG")

    # The fine-tuning run inside is an ordinary run that `kbc predict` reads.
    texts = tmp_path / "texts.txt"
    texts.write_text("Open a TCP socket to the host.\nReturn the square root of x.\n")
    predicted = kbc("predict", run_dir / "finetune", "--input", texts)
    assert predicted.code == 0, predicted.err
    answers = [json.loads(line) for line in predicted.out.splitlines()]
    assert len(answers) == 2 and all(a["label"] in TOPICS for a in answers)
