import os

import numpy as np
import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.classification import classification_dataset, load_text_classification
from keras_bert_core.tasks.records import read_records
from tests.tasks.helpers import DATA, write


def test_csv_with_quotes_and_label_vocabulary():
    data = load_text_classification(os.path.join(DATA, "sentiment.csv"), text_column="review")
    assert len(data) == 5
    assert data.texts[0] == "A warm, funny film."
    assert data.texts[2] == 'Great acting; "superb" score.'
    assert data.pairs is None
    assert data.label_names == ["negative", "neutral", "positive"]
    assert data.labels.dtype == np.int32
    assert data.labels.tolist() == [2, 0, 2, 0, 1]


def test_tsv_pairs_are_literal_and_labels_sort_numerically():
    data = load_text_classification(os.path.join(DATA, "paraphrase.tsv"),
                                    text_column="sentence1", pair_column="sentence2")
    # TSV fields are not unquoted (GLUE's convention).
    assert data.pairs[1] == 'The sun shone "brightly".'
    assert data.label_names == ["0", "1"]
    assert data.labels.tolist() == [1, 0, 1]


def test_jsonl_integer_labels_match_given_string_names(tmp_path):
    data = load_text_classification(os.path.join(DATA, "sentiment.jsonl"),
                                    label_names=["0", "1"])
    assert data.texts == ["A warm, funny film.", "The plot drags.", "Great acting."]
    assert data.labels.tolist() == [1, 0, 1]
    many = "".join(f'{{"text": "t", "label": {label}}}\n' for label in (10, 9, 2))
    assert load_text_classification(write(tmp_path, "n.jsonl", many)).label_names == [
        "2", "9", "10"]


def test_regression_labels_are_scores():
    data = load_text_classification(os.path.join(DATA, "similarity.tsv"),
                                    text_column="sentence1", pair_column="sentence2",
                                    label_column="score", regression=True)
    assert data.label_names is None and data.labels.dtype == np.float32
    assert data.labels.tolist() == pytest.approx([4.6, 0.4, 5.0])


def test_unlabeled_file():
    data = load_text_classification(os.path.join(DATA, "sentiment.csv"), text_column="review",
                                     label_column=None)
    assert data.labels is None and data.label_names is None and len(data) == 5


@pytest.mark.parametrize("name, text, kwargs, match", [
    ("a.csv", "text,label\nok,pos\nbad,maybe\n", {"label_names": ["neg", "pos"]},
     r"line 3, column 'label': unknown label 'maybe'"),
    ("a.csv", "review,label\nok,pos\n", {},
     r"line 2, column 'text': missing \(the record has 'review', 'label'\)"),
    ("a.csv", "text,label\nok,pos\nok,pos,extra\n", {}, r"line 3: expected 2 fields"),
    ("a.csv", "text,label\nok\n", {}, r"line 2: expected 2 fields .*found 1"),
    ("a.csv", "text,label\n", {}, "no records"),
    ("a.csv", "", {}, "the file is empty"),
    ("a.csv", "text,label\nok,\n", {}, r"line 2, column 'label': empty label"),
    ("a.jsonl", '{"text": "ok", "label": 1}\n{"text": "ok", "label": 1\n', {},
     r"line 2: malformed JSON"),
    ("a.jsonl", '["ok", 1]\n', {}, r"line 1: expected a JSON object, got list"),
    ("a.json", '[\n  {"text": "ok", "label": 1}\n]\n', {},
     r"line 1: malformed JSON .*\(the file is read as JSON lines: one object per line\)$"),
    ("a.json", '[{"text": "ok", "label": 1}]\n', {},
     r"line 1: expected a JSON object, got list \(the file is read as JSON lines"),
    ("a.jsonl", '{"text": 3, "label": 1}\n', {}, r"line 1, column 'text': expected text"),
    ("a.txt", "x", {}, "cannot tell the format"),
    ("a.csv", "text,label\nok,4.5\nbad,high\n", {"regression": True},
     r"line 3, column 'label': label 'high' is not a number"),
    ("a.csv", "text,label\ncaf\xe9,pos\n".encode("latin-1"), {},
     "line 2: not UTF-8 text: the byte 0xe9"),
    # Past the decoder's first chunk: the line still counts from the file's start.
    ("a.jsonl", ('{"text": "ok", "label": 1}\n' * 500 + '{"text": "caf\xe9", "label": 1}\n'
                 ).encode("latin-1"), {}, "line 501: not UTF-8 text: the byte 0xe9"),
])
def test_bad_files_raise_data_error_naming_the_place(tmp_path, name, text, kwargs, match):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError, match=match) as info:
        load_text_classification(path, **kwargs)
    assert str(info.value).startswith(path)
    assert isinstance(info.value, ValueError)


def test_missing_file_and_explicit_format(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_text_classification(str(tmp_path / "none.csv"))
    path = write(tmp_path, "data.txt", "text\tlabel\nhello\tgreeting\n")
    assert list(read_records(path, file_format="tsv")) == [
        (2, {"text": "hello", "label": "greeting"})]


def test_classification_dataset_training_is_static_and_complete(preprocessor):
    data = load_text_classification(os.path.join(DATA, "sentiment.csv"), text_column="review")
    dataset = classification_dataset(data, preprocessor, batch_size=2, training=True, seed=1)
    features, labels = dataset.element_spec
    assert features["token_ids"].shape.as_list() == [2, 16]
    assert features["padding_mask"].dtype.name == "int32" and labels.dtype.name == "int32"
    batches = list(dataset)
    assert len(batches) == 2  # 5 examples, the partial batch dropped
    # Each example's features travel with its own label.
    by_ids = {tuple(preprocessor([text], static_shape=True)["token_ids"][0].numpy()): label
              for text, label in zip(data.texts, data.labels, strict=True)}
    for features, labels in batches:
        for ids, label in zip(features["token_ids"].numpy(), labels.numpy(), strict=True):
            assert by_ids[tuple(ids)] == label


def test_classification_dataset_pairs_and_inference_padding(preprocessor):
    data = load_text_classification(os.path.join(DATA, "paraphrase.tsv"),
                                    text_column="sentence1", pair_column="sentence2")
    features, labels = next(iter(classification_dataset(data, preprocessor, batch_size=3)))
    # Inference pads to the batch's longest row rounded up to 8, not to seq_length.
    assert features["token_ids"].shape[1] % 8 == 0
    assert labels.numpy().tolist() == [1, 0, 1]
    segments = features["segment_ids"].numpy()[0][features["padding_mask"].numpy()[0] == 1]
    # [CLS] the cat sat . [SEP] | a cat was sitting . [SEP]
    assert segments.tolist() == [0] * 6 + [1] * 6
    unlabeled = load_text_classification(os.path.join(DATA, "sentiment.csv"),
                                         text_column="review", label_column=None)
    batch = next(iter(classification_dataset(unlabeled, preprocessor, batch_size=5)))
    assert set(batch) == {"token_ids", "segment_ids", "padding_mask"}
