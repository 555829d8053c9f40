"""`kbc pretrain --objective electra`: replaced-token detection, resumed, then fine-tuned
from its discriminator."""

import json
import os

import keras
import numpy as np

from keras_bert_core.checkpoints import load_checkpoint
from keras_bert_core.models import ElectraPretrainer
from tests.cli.conftest import DATA, VOCAB, assert_one_line_error

ELECTRA = ("--vocab", VOCAB, "--seq-length", 32, "--batch-size", 4, "--steps-per-epoch", 2,
           "--objective", "electra", "--generator-size", 0.5, "--rtd-weight", 20)


def test_electra_pretraining_resumes_and_fine_tunes_from_its_discriminator(
        kbc, corpus, tiny_config, tmp_path):
    run = tmp_path / "electra"
    result = kbc("pretrain", corpus, *ELECTRA, "--config", tiny_config, "--epochs", 1,
                 "--run-dir", run)
    assert result.code == 0, result.err
    assert "replaced-token accuracy" in result.err
    saved = json.loads((run / "config.json").read_text())["arguments"]
    assert (saved["objective"], saved["generator_size"], saved["rtd_weight"],
            saved["pair_task"]) == ("electra", 0.5, 20.0, "none")
    # --resume rebuilds the same pretrainer from the run's arguments.
    result = kbc("pretrain", "--resume", "--run-dir", run)
    assert result.code == 0, result.err
    metrics = json.loads((run / "metrics.json").read_text())
    assert np.isfinite(metrics["loss"]) and 0.0 <= metrics["rtd_accuracy"] <= 1.0

    model = keras.saving.load_model(run / "model.keras", compile=False)
    assert isinstance(model, ElectraPretrainer)
    assert model.generator.config.hidden_size == 16  # half of the tiny config's 32
    assert model.generator.embeddings.word_embeddings is model.encoder.embeddings.word_embeddings
    # The run's discriminator is the encoder fine-tuning starts from.
    encoder, config = load_checkpoint(run / "model.keras")
    assert config == model.encoder.config
    np.testing.assert_array_equal(encoder.embeddings.word_embeddings.numpy(),
                                  model.encoder.embeddings.word_embeddings.numpy())
    result = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                 "--text-column", "review", "--checkpoint", run, "--seq-length", 32,
                 "--batch-size", 2, "--epochs", 1, "--run-dir", tmp_path / "classify")
    assert result.code == 0, result.err


def test_electra_refuses_a_pair_task_and_generator_options_go_with_it(kbc, corpus, tmp_path):
    result = kbc("pretrain", corpus, *ELECTRA, "--pair-task", "next_sentence",
                 "--run-dir", tmp_path / "a")
    assert_one_line_error(result, "--objective electra trains no sentence-pair head")
    result = kbc("pretrain", corpus, "--vocab", VOCAB, "--generator-size", 0.5,
                 "--run-dir", tmp_path / "b")
    assert_one_line_error(result, "--generator-size", "needs --objective electra")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_kbc_convert_reads_an_electra_folder(kbc, tmp_path):
    source = os.path.join(os.path.dirname(__file__), "..", "checkpoints", "data", "electra",
                          "generator")
    result = kbc("convert", source, tmp_path / "generator.keras")
    assert result.code == 0, result.err
    encoder, config = load_checkpoint(tmp_path / "generator.keras")
    assert (config.family, config.hidden_size, config.embedding_size) == ("electra", 24, 16)
