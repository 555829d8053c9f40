"""`kbc pretrain --pair-task` (next-sentence, ALBERT's sentence-order, or none) and
`--max-ngram` (ALBERT's n-gram masking): what a run records, and one line for options or
files that disagree."""

import argparse
import os
import subprocess
import sys

import pytest

from keras_bert_core.cli.pretrain import resolve_pair_task
from keras_bert_core.cli.run_dir import RunDirectory
from tests.cli.conftest import VOCAB
from tests.cli.test_errors import assert_user_error

TINY_RUN = ("--vocab", VOCAB, "--seq-length", 32, "--batch-size", 4, "--epochs", 1,
            "--steps-per-epoch", 2)


def test_sentence_order_tfrecords_with_ngram_masking(kbc, corpus, tiny_config, tmp_path):
    from keras_bert_core.pretraining.tfrecords import write_pretraining_tfrecords
    from keras_bert_core.text import BertTokenizer

    shards = write_pretraining_tfrecords(corpus, BertTokenizer(str(VOCAB)),
                                         str(tmp_path / "data" / "sop"), seq_length=32,
                                         pair_task="sentence_order")
    refused = kbc("pretrain", *shards, *TINY_RUN, "--run-dir", tmp_path / "refused")
    assert_user_error(refused, "hold sentence_order labels, not next_sentence",
                      "--pair-task sentence_order")
    assert not (tmp_path / "refused").exists()

    result = kbc("pretrain", *shards, *TINY_RUN, "--config", tiny_config,
                 "--pair-task", "sentence_order", "--max-ngram", "3", "--whole-word-masking",
                 "--run-dir", tmp_path / "run")
    assert result.code == 0, result.err
    run = RunDirectory.open(tmp_path / "run")
    arguments = run.config()["arguments"]
    assert arguments["pair_task"] == "sentence_order" and arguments["max_ngram"] == 3
    assert arguments["next_sentence"] is True  # the two-way pair head is there
    # BertPretrainer's pair head is named for next-sentence prediction; it trains SOP here.
    assert {"loss", "mlm_accuracy", "nsp_accuracy"} <= set(run.read_json("metrics.json"))


def test_pair_task_and_no_next_sentence_together():
    def resolved(pair_task, next_sentence=True):
        args = resolve_pair_task(argparse.Namespace(pair_task=pair_task,
                                                    next_sentence=next_sentence))
        return args.pair_task, args.next_sentence

    assert resolved(None) == ("next_sentence", True)  # also runs saved before --pair-task
    assert resolved(None, next_sentence=False) == ("none", False)
    assert resolved("none") == resolved("none", next_sentence=False) == ("none", False)
    assert resolved("sentence_order") == ("sentence_order", True)
    with pytest.raises(Exception, match="contradicts --pair-task next_sentence"):
        resolved("next_sentence", next_sentence=False)


def test_contradicting_options_print_one_line_from_the_installed_command(corpus, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_core.cli", "pretrain", str(corpus), "--vocab",
         str(VOCAB), "--no-next-sentence", "--pair-task", "sentence_order", "--run-dir",
         str(tmp_path / "run")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("kbc ")]
    assert errors == ["kbc pretrain: error: --no-next-sentence (masked LM only) contradicts "
                      "--pair-task sentence_order; give one of them"]
    assert not (tmp_path / "run").exists()


def test_max_ngram_must_be_positive(kbc, corpus, capsys):
    with pytest.raises(SystemExit) as exit_info:
        kbc("pretrain", corpus, "--vocab", VOCAB, "--max-ngram", "0")
    assert exit_info.value.code == 2
    assert "--max-ngram" in capsys.readouterr().err
