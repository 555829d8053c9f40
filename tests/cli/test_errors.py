"""Bad input gets one clear line naming the problem and a non-zero exit, never a traceback;
existing outputs are never replaced without --overwrite."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.cli.conftest import DATA, VOCAB


def assert_user_error(result, *fragments):
    assert result.code == 2
    errors = [line for line in result.err.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in errors[0]


def finetune_classify(*extra):
    return ("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
            "--text-column", "review", "--vocab", VOCAB, "--batch-size", 2, *extra)


def test_regression_is_for_classify_and_pair(kbc, tmp_path):
    result = kbc("finetune", "--task", "ner", "--regression", "--train", DATA / "ner.conll",
                 "--vocab", VOCAB, "--run-dir", tmp_path / "run")
    assert_user_error(result, "--regression is for --task classify or pair, not ner")


def test_missing_file(kbc, tmp_path):
    missing = tmp_path / "missing.csv"
    result = kbc("finetune", "--task", "classify", "--train", missing, "--vocab", VOCAB,
                 "--run-dir", tmp_path / "run")
    assert_user_error(result, str(missing), "no such file")
    assert not (tmp_path / "run").exists()


def test_training_file_that_is_a_folder_or_of_no_known_format(kbc, tmp_path):
    notes = tmp_path / "train.txt"
    notes.write_text("text,label\nok,pos\n")
    for train, message in ((tmp_path, "a folder, not a file"),
                           (notes, "extension '.txt': name the file .csv, .tsv or .jsonl")):
        result = kbc("finetune", "--task", "classify", "--train", train, "--vocab", VOCAB,
                     "--run-dir", tmp_path / "run")
        assert_user_error(result, str(train), message)
        assert "file_format=" not in result.err  # a Python argument, which kbc has not
    assert not (tmp_path / "run").exists()

def test_missing_corpus_file(kbc, tmp_path):
    result = kbc("vocab", tmp_path / "nothing*.txt", "--output", tmp_path / "vocab.txt")
    assert_user_error(result, "nothing*.txt")


def test_wrong_column(kbc, tmp_path):
    result = kbc("finetune", "--task", "classify", "--train", DATA / "sentiment.csv",
                 "--text-column", "body", "--vocab", VOCAB, "--run-dir", tmp_path / "run")
    assert_user_error(result, "sentiment.csv", "line 2", "column 'body'", "'review'")


def test_unknown_label_in_validation_data(kbc, tmp_path):
    validation = tmp_path / "validation.csv"
    validation.write_text("review,label\nFine.,sarcastic\n")
    result = kbc(*finetune_classify("--validation", validation, "--run-dir", tmp_path / "r"))
    assert_user_error(result, "validation.csv", "unknown label 'sarcastic'")


def test_unknown_task_is_refused_by_the_parser(kbc, capsys):
    with pytest.raises(SystemExit) as exit_info:
        kbc("finetune", "--task", "translate", "--train", DATA / "sentiment.csv")
    assert exit_info.value.code == 2
    assert "invalid choice: 'translate'" in capsys.readouterr().err


def test_unknown_tfds_task(kbc, tmp_path):
    result = kbc("finetune", "--task", "classify", "--tfds", "glue/nope", "--vocab", VOCAB,
                 "--run-dir", tmp_path / "run")
    assert_user_error(result, "unknown TFDS task 'glue/nope'", "glue/mrpc")


def test_tfds_task_of_the_wrong_kind(kbc, tmp_path, monkeypatch):
    import numpy as np

    from keras_bert_core.tasks.classification import TextClassificationData

    pairs = TextClassificationData(["a"], ["b"], np.array([0], np.int32), ["no", "yes"])
    monkeypatch.setattr("keras_bert_core.tasks.tfds.load_tfds_task",
                        lambda name, split, data_dir=None: pairs)
    result = kbc("finetune", "--task", "classify", "--tfds", "glue/mrpc", "--vocab", VOCAB,
                 "--run-dir", tmp_path / "run")
    assert_user_error(result, "glue/mrpc", "text pairs", "--task pair")


def test_vocabulary_that_does_not_match_the_checkpoint(kbc, pretrain_run, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(VOCAB.read_text() + "extra1\nextra2\n")
    result = kbc(*finetune_classify("--checkpoint", pretrain_run, "--vocab", vocab,
                                    "--run-dir", tmp_path / "run"))
    assert_user_error(result, "vocabulary and model do not match", str(vocab), "vocab_size")


def test_vocabulary_without_special_tokens(kbc, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("hello\nworld\n")
    result = kbc(*finetune_classify("--vocab", vocab, "--run-dir", tmp_path / "run"))
    assert_user_error(result, str(vocab), "[PAD]")


def test_checkpoint_that_is_not_one(kbc, tmp_path):
    (tmp_path / "empty").mkdir()
    result = kbc(*finetune_classify("--checkpoint", tmp_path / "empty",
                                    "--run-dir", tmp_path / "run"))
    assert_user_error(result, "no BERT checkpoint found")


def test_invalid_config_json(kbc, tmp_path):
    config = tmp_path / "config.json"
    config.write_text("{not json")
    result = kbc(*finetune_classify("--config", config, "--run-dir", tmp_path / "run"))
    assert_user_error(result, str(config), "not valid JSON")


def test_unwritable_output(kbc, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    result = kbc(*finetune_classify("--run-dir", blocker / "run"))
    assert_user_error(result, "cannot write", str(blocker / "run"))


def test_existing_run_directory_needs_overwrite(kbc, classify_run):
    before = sorted(os.listdir(classify_run))
    result = kbc(*finetune_classify("--run-dir", classify_run))
    assert_user_error(result, str(classify_run), "already exists", "--overwrite")
    assert sorted(os.listdir(classify_run)) == before


def test_existing_prediction_file_needs_overwrite(kbc, classify_run, tmp_path):
    output = tmp_path / "answers.jsonl"
    output.write_text("keep me\n")
    result = kbc("predict", classify_run, "--input", DATA / "sentiment.csv",
                 "--output", output)
    assert_user_error(result, str(output), "already exists")
    assert output.read_text() == "keep me\n"


def test_resume_needs_a_pretraining_run(kbc, classify_run, tmp_path):
    assert_user_error(kbc("pretrain", "--resume"), "--resume needs --run-dir")
    assert_user_error(kbc("pretrain", "--resume", "--run-dir", tmp_path),
                      "not a kbc run directory")
    assert_user_error(kbc("pretrain", "--resume", "--run-dir", classify_run),
                      "not a `kbc pretrain` run")


def test_evaluate_needs_a_finetuning_run(kbc, pretrain_run, tmp_path):
    assert_user_error(kbc("evaluate", tmp_path, DATA / "sentiment.csv"),
                      "not a kbc fine-tuning run")
    assert_user_error(kbc("evaluate", pretrain_run, DATA / "sentiment.csv"),
                      "`kbc pretrain` run, not a fine-tuned model")


def test_predict_on_a_missing_tflite_file(kbc, tmp_path):
    assert_user_error(kbc("predict", tmp_path / "model.tflite"), "no such file")


def test_pair_input_lines_need_two_fields(kbc, tmp_path):
    lines = tmp_path / "pairs.txt"
    lines.write_text("only one text\n")
    from keras_bert_core.cli.tasks import read_input
    from keras_bert_core.tasks.fine_tuning import Pair

    with pytest.raises(Exception, match="input line 1: expected two tab-separated texts"):
        read_input(Pair({}), str(lines))


def test_the_installed_command_prints_one_line_and_no_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_core.cli", "finetune", "--task", "classify",
         "--train", str(tmp_path / "missing.csv"), "--vocab", str(VOCAB)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("kbc ")]
    assert errors == [f"kbc finetune: error: {tmp_path / 'missing.csv'}: no such file"]
    assert not (tmp_path / "runs").exists()


def test_unknown_distribution_strategy_is_refused_by_the_parser(kbc, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        kbc(*finetune_classify("--strategy", "bogus", "--run-dir", tmp_path / "run"))
    assert exit_info.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_squad_lengths_that_leave_no_room_for_the_context(kbc, tmp_path, capsys):
    squad = ("finetune", "--task", "squad", "--train", DATA / "squad_v1.json", "--vocab", VOCAB,
             "--seq-length", 32, "--run-dir", tmp_path / "run")
    assert_user_error(kbc(*squad), "--seq-length 32 leaves no room for the context",
                      "--max-query-length 64")
    assert not (tmp_path / "run").exists()
    with pytest.raises(SystemExit) as exit_info:
        kbc(*squad, "--max-query-length", 8, "--doc-stride", 0)
    assert exit_info.value.code == 2
    assert "argument --doc-stride: 0 is less than 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [("evaluate", DATA / "sentiment.csv"),
                                     ("export", "--output", "out"), ("embed",)])
def test_a_model_that_is_not_there(kbc, tmp_path, command):
    missing = tmp_path / "runs" / "sentiment"
    name, *options = command
    result = kbc(name, missing, *options, cwd=tmp_path, stdin="a text\n")
    assert_user_error(result, f"{missing}: no such file or folder")
    assert "Keras 3 only supports" not in result.err


def test_squad_predictions_from_text_lines_say_what_they_read(kbc, tmp_path):
    from tests.cli.make_release_fixtures import OUTPUT

    run = shutil.copytree(OUTPUT / "squad", tmp_path / "squad")  # the fixture stays unwritten
    texts = tmp_path / "questions.txt"
    texts.write_text("Who wrote it?\n")
    result = kbc("predict", run, "--input", texts)  # --input given: a .txt file is not one
    assert_user_error(result, "squad predictions read a data file in the task's format, not "
                              "text lines")


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_a_checkpoint_and_a_new_model_s_options_together(kbc, tmp_path, command, tiny_config):
    # The checkpoint was trained and --preset/--config ignored without a word.
    data = ((DATA / "sentiment.csv",) if command == "pretrain" else
            ("--task", "classify", "--train", DATA / "sentiment.csv"))
    result = kbc(command, *data, "--checkpoint", tmp_path, "--preset", "mini", "--config",
                 tiny_config, "--run-dir", tmp_path / "run")
    assert_user_error(result, f"--checkpoint {tmp_path} loads a model, and --preset mini and "
                              f"--config {tiny_config} would build a new one")
    assert not (tmp_path / "run").exists()


def test_config_keys_that_no_config_has_are_named(kbc, tmp_path):
    # A misspelled key left the preset's value in place without a word.
    ours, hugging_face = tmp_path / "ours.json", tmp_path / "config.json"
    ours.write_text('{"num_layers": 1, "hidden_sise": 64}')
    hugging_face.write_text('{"model_type": "bert", "num_hidden_layers": 1, '
                            '"architectures": ["BertModel"]}')
    for config, noted in ((ours, True), (hugging_face, False)):
        result = kbc(*finetune_classify("--config", config, "--batch-size", 64,
                                        "--run-dir", tmp_path / config.stem))
        assert_user_error(result, "fewer than --batch-size 64")  # ends before training
        note = f"note: --config {ours}: ignored keys that no BertConfig has: hidden_sise"
        assert (note in result.err) == noted, result.err
        assert ("architectures" in result.err) is False


def test_overwrite_replaces_only_a_run_folder(kbc, tmp_path, classify_run):
    # `--help`: "--overwrite  replace an existing run directory"; a folder of other files
    # was emptied (`--run-dir ~/thesis --overwrite` deleted the thesis).
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text("two years of work\n")
    result = kbc(*finetune_classify("--run-dir", folder, "--overwrite"))
    assert_user_error(result, f"{folder} is a folder of files, not a kbc run (it has no "
                              "config.json): --overwrite replaces only a kbc run")
    assert os.listdir(folder) == ["thesis.tex"]
    run = shutil.copytree(classify_run, tmp_path / "run")  # a run is replaced, as before
    assert kbc(*finetune_classify("--run-dir", run, "--overwrite", "--seq-length", 16,
                                  "--epochs", 1, "--quiet")).code == 0


def test_an_empty_label_delimiter_is_refused_by_the_parser(kbc, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # was a ValueError traceback
        kbc("finetune", "--task", "multilabel", "--train", DATA / "sentiment.csv",
            "--label-delimiter", "", "--vocab", VOCAB, "--run-dir", tmp_path / "run")
    assert exit_info.value.code == 2
    assert "argument --label-delimiter: must not be empty" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ("export", "{run}", "-o", "{folder}"),
    ("vocab", "{corpus}", "--kind", "bpe", "-o", "{folder}"),
    ("vocab", "{corpus}", "-o", "{folder}"),  # a file's place
    ("pretrain", "{corpus}", "--vocab", VOCAB, "--write-tfrecords", "{folder}"),
])
def test_overwrite_replaces_only_what_the_command_writes(kbc, tmp_path, classify_run, corpus,
                                                         command):
    # Each replaced the whole folder: `-o ~/thesis --overwrite` deleted the thesis.
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text("two years of work\n")
    argv = [str(arg).format(run=classify_run, corpus=corpus, folder=folder) for arg in command]
    result = kbc(*argv, "--overwrite")
    assert_user_error(result, f"{folder} is a folder of files, not a",
                      "--overwrite replaces only")
    assert os.listdir(folder) == ["thesis.tex"]


def test_overwrite_replaces_the_command_s_own_output(kbc, tmp_path, corpus):
    records = tmp_path / "records"
    write = ("pretrain", corpus, "--vocab", VOCAB, "--seq-length", 32, "--write-tfrecords",
             records)
    assert kbc(*write).code == 0
    (records / "pretraining-00000-of-00001.tfrecord").write_bytes(b"")
    assert kbc(*write, "--overwrite").code == 0
    assert (records / "pretraining-00000-of-00001.tfrecord").stat().st_size > 0


def test_vocab_min_count_is_a_positive_count_for_the_kinds_that_use_it(kbc, tmp_path, corpus,
                                                                      capsys):
    # Both were taken without a word: SentencePiece ignored it, and 0 or -1 kept everything.
    result = kbc("vocab", corpus, "--kind", "sentencepiece", "--min-count", 5, "-o",
                 tmp_path / "spiece.model")
    assert_user_error(result, "--min-count is for wordpiece and bpe vocabularies")
    assert not (tmp_path / "spiece.model").exists()
    with pytest.raises(SystemExit) as exit_info:
        kbc("vocab", corpus, "--min-count", -1, "-o", tmp_path / "vocab.txt")
    assert exit_info.value.code == 2
    assert "argument --min-count: -1 is less than 1" in capsys.readouterr().err
