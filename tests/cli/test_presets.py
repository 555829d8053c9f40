"""Presets through `kbc`: `kbc export --format preset` writes one from a fine-tuned run, which
loads in a fresh Python process into a model that answers raw text as the run does, and which
`kbc predict` (in a process of its own, where only `kbc`'s own imports register classes),
`kbc export` and `kbc finetune --checkpoint` take; a cased Hugging Face checkpoint fine-tunes
cased with no flag; and what is not a fine-tuned preset ends in one line."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.cli.conftest import DATA
from tests.helpers import graph_optimizations

FAMILIES = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                        "families")
TEXTS = ["A warm, funny film.", "The plot drags.", "It was fine."]
ENVIRONMENT = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}


def run_kbc(*argv):
    """`kbc ARGS...` in a process of its own."""
    return subprocess.run([sys.executable, "-m", "keras_bert_core.cli", *map(str, argv)],
                          capture_output=True, text=True, env=ENVIRONMENT, timeout=400)


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def error_lines(stderr):
    return [line for line in stderr.splitlines() if ": error: " in line]


@pytest.mark.slow
def test_a_preset_from_a_run_answers_raw_text_as_the_run_in_a_fresh_process(
        kbc, classify_run, run_preset, tmp_path):
    from keras_bert_core.cli.finetuned import load_finetuned

    assert {"preset.json", "config.json", "model.keras", "vocab.txt", "tokenizer_config.json",
            "README.md"} <= set(os.listdir(run_preset))
    # The card says how the run trained and what it scored.
    card = (run_preset / "README.md").read_text()
    accuracy = json.loads((classify_run / "metrics.json").read_text())["validation"]["accuracy"]
    for expected in ("| command | kbc finetune |", "| training data | sentiment.csv |",
                     "| epochs | 2 |", f"| validation accuracy | {accuracy:.4g} |",
                     "`negative`, `neutral`, `positive`"):
        assert expected in card
    assert str(classify_run) not in card  # no local paths in a card meant to be shared

    script = textwrap.dedent(f"""
        import json
        import keras_bert_core as kbc
        model, _ = kbc.from_preset({str(run_preset)!r})
        logits = model.predict({TEXTS!r}, verbose=0)
        print(json.dumps(logits.tolist()))
        """)
    fresh = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=ENVIRONMENT, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    model, _, preprocessor = load_finetuned(str(classify_run))
    np.testing.assert_allclose(json.loads(fresh.stdout.splitlines()[-1]),
                               model.predict(preprocessor(TEXTS), verbose=0), atol=1e-5)

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    with graph_optimizations():  # as in the new process: the same rounding to the digit
        expected = kbc("predict", classify_run, "--input", texts)
    assert expected.code == 0, expected.err
    answers = run_kbc("predict", run_preset, "--input", texts)
    assert answers.returncode == 0, answers.stderr
    assert json_lines(answers.stdout) == json_lines(expected.out)


@pytest.mark.slow
def test_export_and_finetune_take_a_preset_folder(kbc, classify_run, run_preset, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    output = tmp_path / "export"
    exported = kbc("export", run_preset, "-o", output, "--format", "saved_model")
    assert exported.code == 0, exported.err
    served = kbc("predict", output / "saved_model", "--input", texts)
    assert served.code == 0, served.err
    expected = json_lines(kbc("predict", classify_run, "--input", texts).out)
    for answer, run_answer in zip(json_lines(served.out), expected, strict=True):
        assert answer["label_name"] == run_answer["label"]
        assert answer["probabilities"] == pytest.approx(
            [run_answer["probabilities"][name] for name in ("negative", "neutral", "positive")],
            abs=1e-4)

    run_dir = tmp_path / "from_preset"
    trained = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                  "--text-column", "review", "--checkpoint", run_preset,
                  "--batch-size", 2, "--epochs", 1, "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    config = json.loads((run_dir / "config.json").read_text())
    preset = json.loads((run_preset / "preset.json").read_text())
    # No --seq-length: the preset's length (the run's 32), not finetune's default 128.
    assert config["task"]["seq_length"] == preset["seq_length"] == 32
    assert config["task"]["lower_case"] is preset["lower_case"] is True
    assert (run_dir / "vocab.txt").read_text() == (run_preset / "vocab.txt").read_text()
    assert config["model_config"] == json.loads(
        (classify_run / "config.json").read_text())["model_config"]


@pytest.mark.slow
def test_a_cased_hugging_face_checkpoint_fine_tunes_cased_without_flags(kbc, tmp_path):
    import keras_bert_core as kbc_package

    cased = tmp_path / "cased"
    shutil.copytree(os.path.join(FAMILIES, "distilbert"), cased)
    settings = json.loads((cased / "tokenizer_config.json").read_text())
    (cased / "tokenizer_config.json").write_text(json.dumps({**settings,
                                                             "do_lower_case": False}))
    run_dir = tmp_path / "run"
    trained = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                  "--text-column", "review", "--checkpoint", cased, "--seq-length", 16,
                  "--batch-size", 2, "--epochs", 1, "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    assert json.loads((run_dir / "config.json").read_text())["task"]["lower_case"] is False
    assert json.loads((run_dir / "tokenizer_config.json").read_text()) == {
        "do_lower_case": False}
    _, preprocessor = kbc_package.from_preset(run_dir)
    assert preprocessor.lower_case is False


@pytest.mark.slow
def test_what_is_not_a_fine_tuned_preset_ends_in_one_line(kbc, tmp_path):
    import keras_bert_core as kbc_package

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "film"]
    encoder = kbc_package.BertEncoder(kbc_package.BertConfig.preset(
        "tiny", vocab_size=len(vocab), max_position_embeddings=16))
    preset = tmp_path / "encoder"
    kbc_package.save_to_preset(encoder, kbc_package.BertPreprocessor(vocab, seq_length=16),
                               preset)
    refused = kbc("export", preset, "-o", tmp_path / "out")
    assert refused.code == 2
    assert error_lines(refused.err) == [
        f"kbc export: error: {preset} is a preset of an encoder, not of a fine-tuned model; "
        f"fine-tune it first: kbc finetune --checkpoint {preset} ..."]

    assert not (tmp_path / "out").exists()

    broken = tmp_path / "classifier"
    kbc_package.save_to_preset(kbc_package.BertClassifier(encoder, num_classes=2),
                               kbc_package.BertPreprocessor(vocab, seq_length=16), broken)
    os.remove(broken / "model.keras")
    texts = tmp_path / "texts.txt"
    texts.write_text("a film\n")
    refused = kbc("predict", broken, "--input", texts)
    assert refused.code == 2
    assert error_lines(refused.err) == [
        f"kbc predict: error: {broken}: an incomplete preset: it lacks model.keras"]
