"""Inputs that ended in a traceback end in one line naming the file and what is wrong in
it (issue 31, item 7): `kbc distill --unlabeled` files that are empty or not UTF-8, preset
settings that are not of their kind or name fewer labels than the model has classes, a
config whose heads do not divide its hidden size; and `kbc predict ... | head -1` ends
quietly."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import keras_bert_core as kbc_package
from tests.cli.conftest import DATA, assert_one_line_error

FAMILIES = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                        "families")


def edited_preset(preset, folder, edit):
    """A copy of `preset` in `folder` whose preset.json `edit(metadata)` changed."""
    shutil.copytree(preset, folder)
    metadata = json.loads((folder / "preset.json").read_text())
    edit(metadata)
    (folder / "preset.json").write_text(json.dumps(metadata))
    return folder


def test_distill_unlabeled_texts_that_are_empty_or_not_utf8(kbc, classify_run, tmp_path):
    empty, latin = tmp_path / "empty.txt", tmp_path / "latin.txt"
    empty.write_text("\n \n")
    latin.write_bytes("a good film\nun caf\u00e9\n".encode("latin-1"))
    for unlabeled, fragments in ((empty, (f"{empty} is empty", "--unlabeled")),
                                 (latin, (f"{latin} is not UTF-8 text (line 2: byte 0xe9)",
                                          "--unlabeled"))):
        run = tmp_path / f"run_{unlabeled.stem}"
        result = kbc("distill", "--teacher", classify_run, "--train", DATA / "sentiment.csv",
                     "--unlabeled", unlabeled, "--batch-size", 2, "--run-dir", run)
        assert_one_line_error(result, *fragments)
        assert not run.exists()


def test_preset_whose_label_names_miss_classes_is_one_line(kbc, run_preset, tmp_path):
    def cut(metadata):
        metadata["task"]["label_names"] = metadata["label_names"] = ["negative", "neutral"]

    preset = edited_preset(run_preset, tmp_path / "preset", cut)
    texts = tmp_path / "texts.txt"
    texts.write_text("a warm film\n")
    for argv in (("predict", preset, "-i", texts),
                 ("evaluate", preset, DATA / "sentiment.csv", "--text-column", "review")):
        assert_one_line_error(kbc(*argv), f"{preset / 'preset.json'}", '"label_names" has 2 '
                              "names, but the BertClassifier in model.keras has 3 classes")


def test_preset_settings_not_of_their_kind_are_one_line(kbc, run_preset, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("a warm film\n")
    preset = edited_preset(run_preset, tmp_path / "length",
                           lambda metadata: metadata.update(seq_length="abc"))
    expected = (f"{preset / 'preset.json'}: \"seq_length\" is 'abc'; expected an integer of "
                "at least 2")
    assert_one_line_error(kbc("predict", preset, "-i", texts), expected)
    assert_one_line_error(kbc("evaluate", preset, DATA / "sentiment.csv"), expected)
    with pytest.raises(kbc_package.CheckpointError) as error:
        kbc_package.from_preset(preset)
    assert str(error.value) == expected

    preset = edited_preset(run_preset, tmp_path / "casing",
                           lambda metadata: metadata["task"].update(lower_case="no"))
    assert_one_line_error(kbc("predict", preset, "-i", texts),
                          "\"task.lower_case\" is 'no'; expected true or false")


def test_config_whose_heads_do_not_divide_its_hidden_size_is_one_line(kbc, tmp_path):
    checkpoint = tmp_path / "roberta"
    shutil.copytree(os.path.join(FAMILIES, "roberta"), checkpoint)
    config = json.loads((checkpoint / "config.json").read_text())
    config.update(hidden_size=512, num_attention_heads=12)
    (checkpoint / "config.json").write_text(json.dumps(config))
    result = kbc("convert", checkpoint, tmp_path / "model.keras")
    assert_one_line_error(result, f"{checkpoint / 'config.json'}: Invalid BertConfig: "
                                  "hidden_size 512 is not divisible by num_heads 12")
    assert not (tmp_path / "model.keras").exists()


def test_predict_into_a_reader_that_stops_early_ends_quietly(classify_run, tmp_path):
    """`kbc predict RUN -i texts.txt | head -1`: more answers than the pipe holds, a reader
    that takes one line and closes it: kbc ends with 141 (128 + SIGPIPE, as `cat` would)
    and says nothing."""
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"a warm, funny film that drags, number {i}\n"
                             for i in range(1000)))  # ~150 kB of answers
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "keras_bert_core.cli", "predict", str(classify_run), "-i",
             str(texts), "--batch-size", "250"], stdout=subprocess.PIPE, stderr=err,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
        first = json.loads(process.stdout.readline())
        process.stdout.close()
        code = process.wait(timeout=300)
    assert first["text"] == "a warm, funny film that drags, number 0"
    message = stderr.read_text()
    assert code == 141, message
    assert "Traceback" not in message and "BrokenPipe" not in message and "error" not in \
        message, message


def test_files_with_a_byte_order_mark_and_crlf_line_ends_are_read(kbc, classify_run, tmp_path):
    # Excel's "CSV UTF-8" and Windows editors write both; the mark stuck to the first
    # column's name ("column 'review': missing (the record has '\ufeffreview', ...)").
    windows = tmp_path / "windows.csv"
    windows.write_bytes(b"\xef\xbb\xbf" + (DATA / "sentiment.csv").read_bytes().replace(
        b"\n", b"\r\n"))
    result = kbc("evaluate", classify_run, windows, "--quiet")
    assert result.code == 0, result.err
    plain = kbc("evaluate", classify_run, DATA / "sentiment.csv", "--quiet")
    assert json.loads(result.out) == json.loads(plain.out)


def test_text_lines_with_a_byte_order_mark_and_crlf_line_ends(kbc, classify_run, tmp_path):
    # The mark and the "\r" reached the model and came back in each answer's "text".
    windows = b"\xef\xbb\xbfGood film.\r\nBad \xc3\xa9 film.\r\n"
    lines = tmp_path / "texts.txt"
    lines.write_bytes(windows)
    for result in (kbc("predict", classify_run, "--quiet", stdin=windows),
                   kbc("predict", classify_run, "--quiet", "--input", lines)):
        assert result.code == 0, result.err
        answers = [json.loads(line) for line in result.out.splitlines()]
        assert [answer["text"] for answer in answers] == ["Good film.", "Bad \u00e9 film."]
    latin = b"\xef\xbb\xbfok\nbad \xff\n"  # the byte the message names is the file's
    assert_one_line_error(kbc("predict", classify_run, stdin=latin),
                          "line 2: byte 0xff")
