"""Multi-label classification: its files, thresholds tuned on validation data, scores,
answers, and the same label sets from Keras, the SavedModel and the `.tflite` file."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.errors import DataError
from keras_bert_core.export import export_saved_model, export_tflite
from keras_bert_core.tasks.fine_tuning import task_of
from keras_bert_core.tasks.multilabel import (
    MultiLabelData,
    answers,
    decide,
    load_multilabel,
    multilabel_scores,
    tune_thresholds,
)
from keras_bert_core.tasks.multilabel.fine_tuning import MultiLabel
from tests.tasks.helpers import write

NAMES = ["cheap", "fast", "new"]


def test_csv_tsv_and_jsonl_give_the_same_label_sets(tmp_path):
    csv = load_multilabel(write(tmp_path, "a.csv", 'text,label\nfast cheap phone,"fast,cheap"\n'
                                                   "slow phone,\nnew phone,new\n"))
    tsv = load_multilabel(write(tmp_path, "a.tsv", "text\ttags\nfast cheap phone\tcheap|fast\n"
                                                   "slow phone\t\nnew phone\tnew\n"),
                          label_column="tags", label_delimiter="|")
    jsonl = load_multilabel(write(tmp_path, "a.jsonl",
                                  '{"text": "fast cheap phone", "label": ["fast", "cheap"]}\n'
                                  '{"text": "slow phone", "label": []}\n'
                                  '{"text": "new phone", "label": "new"}\n'))
    for data in (csv, tsv, jsonl):
        assert data.label_names == NAMES
        assert data.labels.dtype == np.float32
        assert data.label_sets() == [["cheap", "fast"], [], ["new"]]
    # Evaluation files take the training file's labels, in its order, even when unseen.
    assert load_multilabel(write(tmp_path, "b.csv", "text,label\nx,new\n"),
                           label_names=NAMES).labels.tolist() == [[0, 0, 1]]


@pytest.mark.parametrize(("content", "fragment"), [
    ('text,label\nx,"fast,,new"\n', "line 2, column 'label': empty label"),
    ('{"text": "x", "label": {"fast": 1}}\n', "expected a list of labels or text"),
    ('{"text": "x", "label": [1.5]}\n', "a label must be text"),
    ("text,label\nx,\n", "no labels in any record"),
    ("text,label\nx,slow\n", "unknown label 'slow'"),
])
def test_bad_files_name_the_place(tmp_path, content, fragment):
    name = "bad.jsonl" if content.startswith("{") else "bad.csv"
    names = NAMES if "slow" in content else None
    with pytest.raises(DataError, match=fragment.replace("(", r"\(")):
        load_multilabel(write(tmp_path, name, content), label_names=names)


def _rare_label_probabilities(rng, count):
    """A common label the model gets right at 0.5, and a rare one (1 in 10) that it ranks
    right but never gives 0.5: its positives score 0.25-0.45, its negatives 0.0-0.3."""
    truth = np.stack([rng.random(count) < 0.5, rng.random(count) < 0.1], axis=1)
    common = np.where(truth[:, 0], rng.uniform(0.55, 1.0, count), rng.uniform(0.0, 0.45, count))
    rare = np.where(truth[:, 1], rng.uniform(0.25, 0.45, count), rng.uniform(0.0, 0.3, count))
    return np.stack([common, rare], axis=1), truth.astype(np.float32)


def test_thresholds_tuned_on_validation_beat_one_half_on_held_out_data():
    rng = np.random.default_rng(0)
    validation, test = _rare_label_probabilities(rng, 400), _rare_label_probabilities(rng, 400)
    thresholds = tune_thresholds(*validation)
    assert 0.0 < thresholds[1] < 0.45  # below every rare positive's 0.5
    probabilities, truth = test
    untuned = multilabel_scores(truth, probabilities >= 0.5, ["common", "rare"])
    tuned = multilabel_scores(truth, probabilities >= np.array(thresholds), ["common", "rare"])
    assert untuned["labels"]["rare"]["f1"] == 0.0
    assert tuned["labels"]["rare"]["f1"] > 0.6
    assert tuned["labels"]["common"]["f1"] == pytest.approx(1.0)
    assert tuned["macro_f1"] > untuned["macro_f1"] + 0.3
    assert tuned["micro_f1"] > untuned["micro_f1"]


def test_a_label_no_validation_example_has_keeps_one_half():
    assert tune_thresholds([[0.9, 0.7], [0.1, 0.2]], [[1, 0], [0, 0]])[1] == 0.5


def test_scores_count_micro_over_decisions_and_macro_over_labels():
    truth = [[1, 0, 1], [1, 1, 0], [0, 0, 0]]
    predicted = [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    scores = multilabel_scores(truth, predicted, NAMES)
    # cheap: tp 2; fast: tp 1, fp 1; new: fn 1, fp 1 -> tp 3, fp 2, fn 1.
    assert scores["micro_precision"] == pytest.approx(3 / 5)
    assert scores["micro_recall"] == pytest.approx(3 / 4)
    assert scores["micro_f1"] == pytest.approx(6 / 9)
    assert scores["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert scores["exact_match"] == pytest.approx(1 / 3)
    assert scores["labels"]["fast"] == {"precision": 0.5, "recall": 1.0,
                                        "f1": pytest.approx(2 / 3), "support": 1}


def test_answers_are_label_sets_by_each_labels_threshold():
    logits = np.log([[0.9 / 0.1, 0.3 / 0.7, 0.6 / 0.4], [0.2 / 0.8, 0.1 / 0.9, 0.4 / 0.6]])
    (first, second) = answers(logits, NAMES, thresholds=[0.5, 0.25, 0.7])
    assert first["labels"] == ["cheap", "fast"]  # most probable first; "new" misses its 0.7
    assert first["probabilities"] == pytest.approx({"cheap": 0.9, "fast": 0.3, "new": 0.6})
    assert second["labels"] == []
    assert decide(logits).tolist() == [[1, 0, 1], [0, 0, 0]]  # 0.5 each


def _cuts_with_margins(probabilities):
    """Per label, a threshold in the widest gap between the middle probabilities, so that
    float rounding in another runtime cannot move a text across it."""
    thresholds = []
    for column in np.sort(probabilities, axis=0).T:
        middle = column[1:-1]
        gap = int(np.argmax(np.diff(middle)))
        thresholds.append(float((middle[gap] + middle[gap + 1]) / 2))
    return thresholds


def test_keras_saved_model_and_tflite_give_the_same_label_sets(preprocessor, tmp_path):
    keras.utils.set_random_seed(3)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=16)
    task = MultiLabel({"seq_length": 16, "lower_case": True})
    # Labels in 1 of 5, 1 of 2 and 4 of 5 training texts: the head starts from those odds.
    labels = np.array([[1, 1, 1]] * 2 + [[0, 1, 1]] * 3 + [[0, 0, 1]] * 3 + [[0, 0, 0]] * 2,
                      "float32")
    task.learn_labels(MultiLabelData(["t"] * 10, labels, NAMES))
    assert task.settings["label_priors"] == [0.2, 0.5, 0.8]
    model = task.build_model(kbc.BertEncoder(config), preprocessor)
    texts = ["a warm funny film", "the plot drags", "great acting", "not worth the ticket",
             "a great film", "the acting drags", "funny", "worth it"]
    probabilities = keras.ops.convert_to_numpy(keras.ops.sigmoid(model.predict(texts, verbose=0)))
    np.testing.assert_allclose(probabilities.mean(0), [0.2, 0.5, 0.8], atol=0.1)
    model.thresholds = _cuts_with_margins(probabilities)
    path = tmp_path / "model.keras"
    model.save(path)
    model = keras.saving.load_model(path)  # the thresholds travel in the model's config
    task = task_of(model)
    expected = [answer["labels"] for answer in task.predict(model, task.from_lines(texts))]
    assert {len(labels) for labels in expected} > {0} and len(set(map(tuple, expected))) > 2

    def label_sets(names):
        return [sorted(name.decode() for name in row if name) for row in names]

    export_dir = export_saved_model(model, preprocessor, tmp_path / "saved", warmup=False,
                                    label_names=NAMES)
    served = tf.saved_model.load(export_dir).signatures["serving_default"](
        text=tf.constant(texts))
    assert label_sets(served["label_names"].numpy()) == [sorted(s) for s in expected]
    assert served["label_count"].numpy().tolist() == [len(s) for s in expected]
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="LiteRT interpreter")
    from tensorflow_text import tflite_registrar

    tflite = export_tflite(model, preprocessor, tmp_path / "model.tflite", label_names=NAMES)
    runner = litert.InterpreterWithCustomOps(
        model_path=str(tflite), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS
    ).get_signature_runner("serving_default")
    on_device = [runner(text=np.array([text.encode()], dtype=object)) for text in texts]
    assert [label_sets(row["label_names"])[0] for row in on_device] == [
        sorted(s) for s in expected]
    np.testing.assert_array_equal(np.concatenate([row["labels"] for row in on_device]),
                                  served["labels"].numpy())
