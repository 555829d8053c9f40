"""`kbc` on ModernBERT's Hugging Face folder (tokenizer.json alone, byte-level BPE with
BERT's special tokens): fine-tuning, the exports, and masked-LM pretraining at its rate."""

import json
import os

import pytest

from keras_bert_core.cli.run_dir import RunDirectory

MODERNBERT = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints",
                                           "data", "modernbert", "mlm"))


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow  # its BPE tokenizer traces slowly, as RoBERTa's
def test_finetune_from_a_modernbert_folder_then_export(kbc, tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(
        f"the {word} list of items,{label}" for word, label in
        [("good", "positive"), ("bad", "negative")] * 8) + "\n")
    run_dir = tmp_path / "run"
    trained = kbc("finetune", "--task", "classify", "--train", train, "--checkpoint",
                  MODERNBERT, "--seq-length", 16, "--batch-size", 8, "--epochs", 1,
                  "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    assert RunDirectory.open(run_dir).config()["model_config"]["family"] == "modernbert"
    texts = tmp_path / "texts.txt"
    texts.write_text("the good list\nthe bad items\n")
    predicted = kbc("predict", run_dir, "--input", texts)
    assert predicted.code == 0, predicted.err
    output = tmp_path / "export"
    exported = kbc("export", run_dir, "--output", output)
    assert exported.code == 0, exported.err
    served = kbc("predict", output / "saved_model", "--input", texts)
    assert served.code == 0, served.err
    for ours, theirs in zip(json_lines(predicted.out), json_lines(served.out), strict=True):
        assert theirs["probabilities"] == pytest.approx(
            [ours["probabilities"][label] for label in ("negative", "positive")], abs=1e-4)
    # Its byte-level BPE has no TFLite ops: the .tflite file takes token ids, as RoBERTa's.
    assert "token_ids" in exported.err
    tflite = kbc("predict", output / "model.tflite", "--input", texts)
    assert tflite.code == 2 and "not text" in tflite.err


@pytest.mark.slow  # its BPE tokenizer traces slowly in tf.data
def test_pretrain_a_modernbert_checkpoint_with_its_masking_rate(kbc, corpus, tmp_path):
    run_dir = tmp_path / "run"
    result = kbc("pretrain", corpus, "--checkpoint", MODERNBERT, "--mask-rate", 0.3,
                 "--pair-task", "none", "--seq-length", 20, "--batch-size", 4, "--epochs", 1,
                 "--steps-per-epoch", 1, "--run-dir", run_dir)
    assert result.code == 0, result.err
    run = RunDirectory.open(run_dir)
    assert run.config()["arguments"]["mask_rate"] == 0.3
    assert run.config()["arguments"]["max_predictions"] in (None, 6)  # 0.3 of 20
    assert "nsp_accuracy" not in run.read_json("metrics.json")
