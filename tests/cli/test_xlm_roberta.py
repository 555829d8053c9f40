"""`kbc` on XLM-RoBERTa's Hugging Face folder (sentencepiece.bpe.model, fairseq's ids):
convert, fine-tune, predict, and both exports taking raw text, answering as Keras."""

import json
import os

import numpy as np
import pytest

import keras_bert_core
from keras_bert_core.cli.run_dir import RunDirectory

XLM_ROBERTA = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir,
                                            "checkpoints", "data", "xlm_roberta", "mlm"))
TEXTS = ["Das ist gut.", "C'est mauvais !", "Это хорошо", "とても悪い", "good, très bien"]


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_convert_an_xlm_roberta_folder(kbc, tmp_path):
    output = tmp_path / "converted" / "model.keras"
    with pytest.warns(UserWarning, match="no pooler weights"):
        result = kbc("convert", XLM_ROBERTA, output)
    assert result.code == 0, result.err
    assert (output.parent / "sentencepiece.bpe.model").exists()
    model, preprocessor = keras_bert_core.from_preset(str(output))
    assert model.config.family == "xlm-roberta"
    assert isinstance(preprocessor.tokenizer, keras_bert_core.XlmRobertaTokenizer)
    assert preprocessor(("a", "b"), static_shape=False)["token_ids"].numpy().tolist()[:1] == [0]


@pytest.mark.slow  # fine-tunes, then writes and runs a SavedModel and a .tflite file
def test_finetune_from_an_xlm_roberta_folder_then_export_with_raw_text(kbc, tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(
        f"{text},{label}" for text, label in
        [("sehr gut", "positive"), ("très mauvais", "negative"), ("хорошо", "positive"),
         ("悪い", "negative")] * 4) + "\n")
    run_dir = tmp_path / "run"
    trained = kbc("finetune", "--task", "classify", "--train", train, "--checkpoint",
                  XLM_ROBERTA, "--seq-length", 16, "--batch-size", 8, "--epochs", 1,
                  "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    assert RunDirectory.open(run_dir).config()["model_config"]["family"] == "xlm-roberta"
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    predicted = kbc("predict", run_dir, "--input", texts)
    assert predicted.code == 0, predicted.err
    ours = [line["probabilities"] for line in json_lines(predicted.out)]
    assert len(ours) == len(TEXTS)

    output = tmp_path / "export"
    exported = kbc("export", run_dir, "--output", output)
    assert exported.code == 0, exported.err
    # Both exports take raw text: tf.text's TFLite SentencePiece kernels run its model.
    for served_from in ("saved_model", "model.tflite"):
        served = kbc("predict", output / served_from, "--input", texts)
        assert served.code == 0, (served_from, served.err)
        for keras_line, line in zip(ours, json_lines(served.out), strict=True):
            np.testing.assert_allclose(
                line["probabilities"],
                [keras_line[label] for label in ("negative", "positive")], atol=1e-4,
                err_msg=served_from)
