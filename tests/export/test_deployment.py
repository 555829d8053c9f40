"""What a deployment relies on: exports appear only when complete, names stay inside their
folder, and the served graph bounds what one request may cost."""

import os
import re
from types import SimpleNamespace

import pytest
import tensorflow as tf

from keras_bert_core.export import export_saved_model, export_tflite
from keras_bert_core.export.limits import MAX_BATCH_SIZE
from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.string_batches import cut_texts
from tests.export.helpers import ROOT, bag_of_words_model


@pytest.fixture
def small(char_vocab_file):
    """A quick model to export and its preprocessor."""
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    return bag_of_words_model(len(preprocessor.vocabulary)), preprocessor


def test_a_version_folder_appears_only_when_complete(small, tmp_path, monkeypatch):
    model, preprocessor = small
    versions = tmp_path / "chars"

    def killed(export_dir, *args, **kwargs):
        # TF Serving watches chars/: while files are written, only a hidden folder with no
        # version number is added there.
        partial = os.path.basename(export_dir)
        assert partial.startswith(".")
        assert sorted(os.listdir(versions)) == sorted([*before, partial])
        raise KeyboardInterrupt

    monkeypatch.setattr("keras_bert_core.export.saved_model.write_warmup_requests", killed)
    before = []
    with pytest.raises(KeyboardInterrupt):
        export_saved_model(model, preprocessor, tmp_path, name="chars")
    assert os.listdir(versions) == []

    export_saved_model(model, preprocessor, tmp_path, name="chars", warmup=False)
    graph = (versions / "1" / "saved_model.pb").read_bytes()
    before = ["1"]
    with pytest.raises(KeyboardInterrupt):
        export_saved_model(model, preprocessor, tmp_path, name="chars", overwrite=True)
    assert os.listdir(versions) == ["1"]  # the old version, untouched
    assert (versions / "1" / "saved_model.pb").read_bytes() == graph


def test_a_destination_that_is_not_a_saved_model_is_left_alone(small, tmp_path):
    model, preprocessor = small
    destination = tmp_path / "out"
    destination.mkdir()
    (destination / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="is not a SavedModel"):
        export_saved_model(model, preprocessor, destination, overwrite=True)
    assert os.listdir(destination) == ["notes.txt"]


def test_a_tflite_file_is_written_beside_and_swapped_in(small, tmp_path, monkeypatch):
    model, preprocessor = small
    path = tmp_path / "out" / "chars.tflite"
    path.parent.mkdir()
    path.write_bytes(b"old")
    opened = []
    real_open = open

    def watching_open(file, mode="r", *args, **kwargs):
        if "w" in mode:
            opened.append(os.fspath(file))
            assert path.read_bytes() == b"old"  # the final name still holds the old file
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watching_open)
    export_tflite(model, preprocessor, path)
    monkeypatch.undo()
    assert opened and all(os.path.basename(p).startswith(".") for p in opened)
    assert path.read_bytes()[4:8] == b"TFL3"
    assert os.listdir(path.parent) == ["chars.tflite"]


@pytest.mark.parametrize("name", ["../outside", "/tmp/outside", "a/b", "..", ".", ""])
def test_model_names_are_one_folder_name(small, tmp_path, name):
    model, preprocessor = small
    with pytest.raises(ValueError, match="the model name must be one folder name"):
        export_saved_model(model, preprocessor, tmp_path / "models", name=name)
    assert not (tmp_path / "models").exists()


def test_limits_must_be_positive(small, tmp_path):
    model, preprocessor = small
    with pytest.raises(ValueError, match="max_batch_size must be a positive integer"):
        export_saved_model(model, preprocessor, tmp_path, max_batch_size=0)
    with pytest.raises(ValueError, match="max_text_bytes must be an integer of at least 4"):
        export_saved_model(model, preprocessor, tmp_path, max_text_bytes=3)


@pytest.mark.parametrize("text", [
    "plain ascii text",
    "é" * 9,  # 2-byte characters
    "a€€€€€€",  # 3-byte characters
    "ab😀😀😀😀",  # 4-byte characters
    "é\u0301a😀€x",  # a combining mark, then all widths
])
def test_texts_are_cut_at_a_character_boundary(text):
    data = text.encode()
    for max_bytes in range(4, len(data) + 2):
        cut = cut_texts(tf.constant([data]), max_bytes).numpy()[0]
        longest = max(len(text[:n].encode()) for n in range(len(text) + 1)
                      if len(text[:n].encode()) <= max_bytes)
        assert cut == data[:longest], (text, max_bytes)
        cut.decode("utf-8")  # never half a character


def test_requests_over_the_limits(small, tmp_path):
    model, preprocessor = small
    export_dir = export_saved_model(model, preprocessor, tmp_path / "sm", max_batch_size=2,
                                    max_text_bytes=8, warmup=False)
    signatures = tf.saved_model.load(export_dir).signatures
    for name, inputs in (("serving_default", {"text": tf.constant(["a", "b", "c"])}),
                         ("tokenize", {"text": tf.constant(["a", "b", "c"])}),
                         ("predict_ids", {"token_ids": tf.ones([3, 4], tf.int32),
                                          "segment_ids": tf.zeros([3, 4], tf.int32),
                                          "padding_mask": tf.ones([3, 4], tf.int32)})):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"a request holds at most 2 rows \(max_batch_size"):
            signatures[name](**inputs)

    tokenize = signatures["tokenize"]
    long_text, cut_text = "abcdefg€xyz" * 1000, "abcdefg"  # the € would end at byte 10
    assert tokenize(text=tf.constant([long_text]))["token_ids"].numpy().tolist() == tokenize(
        text=tf.constant([cut_text]))["token_ids"].numpy().tolist()
    answered = signatures["serving_default"](text=tf.constant([long_text, "ab"]))["outputs"]
    assert answered.shape == (2, 2)


def test_tf_serving_batches_no_more_rows_than_the_export_takes():
    config = (ROOT / "export" / "batching.config").read_text()
    assert re.search(r"^max_batch_size \{ value: (\d+) \}$", config, re.M)[1] == str(
        MAX_BATCH_SIZE)
    assert "enable_large_batch_splitting" not in config  # the server refuses larger requests


def test_kbc_export_gives_the_tflite_files_its_max_text_bytes(small, tmp_path, monkeypatch):
    import keras_bert_core.export as export_package
    from keras_bert_core.cli import export as cli_export

    model, preprocessor = small
    received = []

    def export_tflite_stub(model, preprocessor, path, **options):
        received.append(options.get("max_text_bytes", "export_tflite's default"))
        open(path, "wb").close()
        return path

    monkeypatch.setattr(export_package, "export_tflite", export_tflite_stub)
    task = SimpleNamespace(settings={"label_names": None, "max_answer_length": 30},
                           null_score_threshold=lambda: None)
    for limits in ({"max_batch_size": 2, "max_text_bytes": 64}, {"max_text_bytes": None}, None):
        cli_export.export(model, task, preprocessor, str(tmp_path), formats=("tflite",),
                          limits=limits)
    assert received == [64, None, "export_tflite's default"]
