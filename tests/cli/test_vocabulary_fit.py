"""A model meets its vocabulary: a cut vocabulary in a run, a preset or a `.keras` file is
refused at load and at export; TFRecords keep the vocabulary, length and casing they were
written with, and training from them is checked against those; `--cased` with an uncased
vocabulary is refused. Each case ends in one line and writes nothing."""

import argparse
import json
import pathlib
import shutil

import pytest

import keras_bert_core as kbc_package
from keras_bert_core.cli.pretrain_records import resolve_records_options
from keras_bert_core.errors import VocabularyMismatchError
from tests.cli.conftest import DATA, VOCAB, assert_one_line_error

VOCABULARY_SIZE = len(VOCAB.read_text().splitlines())
TEXTS = "a good film\nthe plot drags\n"


def cut(vocabulary, lines=100):
    vocabulary.write_text("".join(vocabulary.read_text().splitlines(keepends=True)[:lines]))


def test_a_cut_vocabulary_in_a_run_or_a_preset_is_refused_at_load_and_at_export(
        kbc, classify_run, run_preset, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text(TEXTS)
    run = tmp_path / "run"
    shutil.copytree(classify_run, run, ignore=shutil.ignore_patterns("backup", "checkpoints",
                                                                    "logs", "*.png"))
    # The session's preset of the same run (`kbc export --format preset`), copied to be cut.
    preset = shutil.copytree(run_preset, tmp_path / "preset")
    for folder in (run, preset):
        cut(folder / "vocab.txt")
        message = (f"{folder / 'vocab.txt'} has 100 tokens but ",
                   f"word embeddings have {VOCABULARY_SIZE} rows (vocab_size)")
        assert_one_line_error(kbc("predict", folder, "-i", texts), *message)
        assert_one_line_error(kbc("export", folder, "--format", "preset", "-o",
                                  tmp_path / "again"), *message)
        assert not (tmp_path / "again").exists()
        with pytest.raises(VocabularyMismatchError, match="has 100 tokens"):
            kbc_package.from_preset(folder)


def test_a_keras_file_whose_own_vocabulary_was_cut_is_refused(kbc, tmp_path):
    tokens = VOCAB.read_text().splitlines()
    encoder = kbc_package.BertEncoder(kbc_package.BertConfig.preset(
        "tiny", vocab_size=len(tokens), num_layers=1, hidden_size=16, num_heads=2,
        intermediate_size=32, max_position_embeddings=16))
    model = kbc_package.BertClassifier(
        encoder, num_classes=2, preprocessor=kbc_package.BertPreprocessor(tokens[:100],
                                                                          seq_length=16))
    path = tmp_path / "model.keras"
    model.save(path)
    texts = tmp_path / "texts.txt"
    texts.write_text(TEXTS)
    message = (f"the vocabulary inside {path} has 100 tokens but {path}'s word embeddings "
               f"have {len(tokens)} rows",)
    assert_one_line_error(kbc("predict", path, "-i", texts), *message)
    assert_one_line_error(kbc("export", path, "-o", tmp_path / "out"), *message)
    assert not (tmp_path / "out").exists()
    with pytest.raises(VocabularyMismatchError, match="has 100 tokens"):
        kbc_package.from_preset(path)


def test_training_from_tfrecords_is_checked_against_what_they_were_written_with(
        kbc, corpus, tiny_config, vocab_file, tmp_path):
    records = tmp_path / "records"
    written = kbc("pretrain", corpus, "--vocab", VOCAB, "--seq-length", 16,
                  "--write-tfrecords", records)
    assert written.code == 0, written.err
    metadata = json.loads((records / "pretraining.meta.json").read_text())
    assert (metadata["vocabulary_size"], metadata["seq_length"],
            metadata["lower_case"]) == (VOCABULARY_SIZE, 16, True)
    shards = str(records / "pretraining-00000-of-00001.tfrecord")
    run = tmp_path / "run"
    train = ("--config", tiny_config, "--batch-size", 4, "--epochs", 1,
             "--steps-per-epoch", 1, "--run-dir", run)
    assert_one_line_error(kbc("pretrain", shards, "--vocab", vocab_file, *train),
                          f"{vocab_file} (30,522 tokens) is not the vocabulary the records "
                          f"were written with ({VOCABULARY_SIZE} tokens, as "
                          f"{records / 'pretraining.meta.json'} says)")
    assert_one_line_error(kbc("pretrain", shards, "--vocab", VOCAB, "--seq-length", 64, *train),
                          "--seq-length 64, but the records were written with rows of 16 "
                          "tokens")
    assert_one_line_error(kbc("pretrain", shards, "--cased", *train),
                          "--cased, but the records were written uncased")
    assert not run.exists()
    # Without the options, the records' own: their length, casing and vocabulary.
    options = argparse.Namespace(inputs=[shards], seq_length=None, cased=None, vocab=None,
                                 checkpoint=None)
    resolve_records_options(options)
    assert (options.seq_length, options.cased, options.vocab) == (16, False, str(records))
    # Records written before the metadata: their length, and ids past a smaller vocabulary.
    (records / "pretraining.meta.json").unlink()
    small = tmp_path / "small.txt"
    shutil.copy(VOCAB, small)
    cut(small, 50)
    other = tmp_path / "other"
    assert_one_line_error(kbc("pretrain", shards, "--vocab", small, *train[:-1], other),
                          f"{small} has 50 tokens but the records {shards} hold token id")
    assert_one_line_error(kbc("pretrain", shards, "--vocab", VOCAB, "--seq-length", 64,
                              *train[:-1], other),
                          f"--seq-length 64, but the records were written with rows of 16 "
                          f"tokens ({shards})")
    assert not other.exists()


def test_cased_with_an_uncased_vocabulary_is_refused_and_the_reverse_is_said(
        kbc, vocab_file, corpus, tmp_path):
    refused = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                  "--text-column", "review", "--vocab", vocab_file, "--cased",
                  "--run-dir", tmp_path / "run")
    assert_one_line_error(refused, f"--cased: the vocabulary {vocab_file} has 0 of 30,522 "
                                   "tokens with capitals, so it is uncased; drop --cased")
    assert not (tmp_path / "run").exists()
    cased = tmp_path / "cased.txt"
    cased.write_text(VOCAB.read_text() + "Paris\nLondon\n")
    written = kbc("pretrain", corpus, "--vocab", cased, "--seq-length", 16, "--uncased",
                  "--write-tfrecords", tmp_path / "records")
    assert written.code == 0, written.err
    assert (f"the vocabulary {cased} has 2 of {VOCABULARY_SIZE + 2} tokens with capitals, so "
            "it is cased, but the text is lower-cased (--uncased)") in written.err


def test_special_tokens_must_sit_at_the_ids_a_checkpoint_was_trained_with(kbc, tmp_path):
    """A Hugging Face folder whose config.json trained `<pad>` at another id than its
    vocabulary holds it (a vocabulary of the right size in another order) is refused."""
    folder = tmp_path / "roberta"
    shutil.copytree(pathlib.Path(__file__).parents[1] / "checkpoints" / "data" / "families"
                    / "roberta", folder)
    config = json.loads((folder / "config.json").read_text())
    config["pad_token_id"] = 5
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(VocabularyMismatchError, match="says pad_token_id 5, but .* has the pad "
                                                      "token at id 1"):
        kbc_package.from_preset(folder)
    result = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                 "--text-column", "review", "--checkpoint", folder, "--batch-size", 2,
                 "--seq-length", 16,
                 "--run-dir", tmp_path / "run")
    assert_one_line_error(result, f"{folder / 'config.json'} says pad_token_id 5",
                          "pad token at id 1")
    assert not (tmp_path / "run").exists()
