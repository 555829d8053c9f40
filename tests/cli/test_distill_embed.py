"""`kbc distill` of an embedding model: a student of fewer layers learns a tiny teacher's
vectors of unlabeled lines, and comparison.json holds both models' retrieval metrics."""

import json

import keras
import numpy as np
import pytest

import keras_bert_core as kbc_package
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.tasks.embedding.fine_tuning import Embed
from tests.cli.conftest import DATA, TINY_CONFIG, VOCAB, assert_one_line_error

TEXTS = ["the cat sat", "a cat was sitting", "it rained", "water flows", "she sings",
         "she is singing", "the dog runs", "a dog is running"]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A two-layer embedding model saved alone (.keras, its preprocessor inside), without
    dropout (the student copies its config: its vectors then follow the teacher's
    closely enough to be compared in a few steps)."""
    keras.utils.set_random_seed(0)
    tokens = VOCAB.read_text().splitlines()
    config = kbc_package.BertConfig.from_dict({**TINY_CONFIG, "num_layers": 2,
                                               "vocab_size": len(tokens), "dropout": 0.0,
                                               "attention_dropout": 0.0})
    task = Embed({"seq_length": 16, "lower_case": True})
    model = BertEmbedder(kbc_package.BertEncoder(config),
                         preprocessor=kbc_package.BertPreprocessor(tokens, seq_length=16),
                         task_settings=dict(task.settings))
    # A second layer that matters: the student (the first alone) starts away from it.
    block = model.encoder.blocks[1]
    block.set_weights([weights * 3 for weights in block.get_weights()])
    path = tmp_path_factory.mktemp("teacher") / "model.keras"
    model.save(path)
    return path


def _cosines(a, b):
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_a_student_of_fewer_layers_learns_the_teachers_vectors(kbc, teacher, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    run_dir = tmp_path / "student"
    result = kbc("distill", "--teacher", teacher, "--unlabeled", texts, "--validation",
                 DATA / "pairs.csv", "--batch-size", 4, "--epochs", 2, "--learning-rate",
                 1e-3, "--no-export-latency", "--run-dir", run_dir)
    assert result.code == 0, result.err
    assert "recall@10" in result.out and "Keras ms per text" in result.out
    teacher_model = keras.saving.load_model(teacher)
    student = keras.saving.load_model(run_dir / "model.keras")
    assert isinstance(student, BertEmbedder) and student.preprocessor is not None
    assert student.encoder.config.num_layers == 1 < teacher_model.encoder.config.num_layers
    losses = [record["loss"] for record in map(json.loads, (run_dir / "metrics.jsonl").open())
              if record["event"] == "epoch"]
    assert losses[-1] < losses[0]
    target = teacher_model.predict(TEXTS, verbose=0)
    before = kbc_package.make_distilbert_student(teacher_model).predict(TEXTS, verbose=0)
    after = student.predict(TEXTS, verbose=0)
    assert _cosines(after, target).mean() > _cosines(before, target).mean()
    comparison = json.loads((run_dir / "comparison.json").read_text())
    for name in ("teacher", "student"):
        assert 0 < comparison[name]["metrics"]["recall@10"] <= 1
        assert comparison[name]["keras_ms_per_text"] > 0
    assert comparison["student"]["parameters"] < comparison["teacher"]["parameters"]
    embedded = kbc("embed", run_dir, "-i", texts, "-o", tmp_path / "v.npy")
    assert embedded.code == 0, embedded.err
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), after, atol=1e-5)


def test_a_narrower_student_gets_a_projection_to_the_teachers_width(teacher):
    teacher_model = keras.saving.load_model(teacher)
    config = kbc_package.BertConfig.from_dict({
        **TINY_CONFIG, "hidden_size": 16, "intermediate_size": 32,
        "vocab_size": teacher_model.encoder.config.vocab_size})
    student = Embed({"seq_length": 16}).build_student(
        kbc_package.BertEncoder(config), teacher_model.preprocessor, teacher_model)
    assert student.embedding_dim == teacher_model.embedding_dim == 32
    assert student.dense_layers[-1] == {"units": 32, "activation": "linear", "use_bias": True}
    with pytest.raises(ValueError, match="give the student a dense layer of 32 units"):
        kbc_package.EmbeddingDistiller(teacher_model, BertEmbedder(
            kbc_package.BertEncoder(config)))


def test_label_options_and_labeled_data_for_an_embedder_are_one_line(kbc, teacher, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    assert_one_line_error(kbc("distill", "--teacher", teacher, "--unlabeled", texts,
                              "--alpha", 0.3, "--batch-size", 4, "--run-dir", tmp_path / "a"),
                          "teacher's vectors", "alpha do not apply")
    assert_one_line_error(kbc("distill", "--teacher", teacher, "--train", DATA / "pairs.csv",
                              "--run-dir", tmp_path / "b"), "--train", "--unlabeled")
    assert_one_line_error(kbc("distill", "--teacher", teacher, "--unlabeled", texts,
                              "--queries", texts, "--run-dir", tmp_path / "c"),
                          "--queries, --corpus and --relevance go together")
