"""`kbc finetune --task embed`, `kbc evaluate` on retrieval sets and pairs, `kbc embed`: one
tiny run shared by the tests, and the one-line errors of bad pairs and retrieval files."""

import json

import keras
import numpy as np
import pytest

from keras_bert_core.models.embedder import BertEmbedder
from tests.cli.conftest import DATA, VOCAB, assert_one_line_error

RETRIEVAL = ("recall@1", "recall@10", "mrr@10", "ndcg@10")


def retrieval_set(folder, qrels="query-id\tcorpus-id\nq1\td1\nq2\td2\n"):
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "the cat sat"}\n'
                                          '{"_id": "q2", "text": "she sings"}\n')
    (folder / "corpus.csv").write_text("id,text\nd1,a cat was sitting\nd2,she is singing\n"
                                       "d3,water flows\n")
    (folder / "qrels.tsv").write_text(qrels)
    return ["--queries", folder / "queries.jsonl", "--corpus", folder / "corpus.csv",
            "--relevance", folder / "qrels.tsv"]


def test_a_finetuned_embedder_is_a_whole_model_with_retrieval_metrics(embed_run):
    metrics = json.loads((embed_run / "metrics.json").read_text())
    assert sorted(metrics["validation"]) == sorted(RETRIEVAL)
    assert 0 < metrics["validation"]["recall@10"] <= 1
    model = keras.saving.load_model(embed_run / "model.keras")
    assert isinstance(model, BertEmbedder)
    assert model.task_settings["name"] == "embed"
    assert model.task_settings["pair_columns"] == ["anchor", "positive"]
    assert model.length_buckets == (8, 16)  # --length-buckets 8 16
    vectors = model.predict(["the cat sat", "she sings"], verbose=0)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-5)


def test_evaluate_scores_retrieval_sets_pairs_and_scored_pairs(kbc, embed_run, tmp_path):
    result = kbc("evaluate", embed_run, *retrieval_set(tmp_path), "-o", tmp_path / "m.json")
    assert result.code == 0, result.err
    metrics = json.loads(result.out)
    assert sorted(metrics) == sorted(RETRIEVAL)
    assert metrics["recall@10"] == 1.0  # 3 documents: both found in the top 10
    assert json.loads((tmp_path / "m.json").read_text()) == metrics
    pairs = kbc("evaluate", embed_run, DATA / "pairs.csv")
    assert pairs.code == 0, pairs.err
    assert sorted(json.loads(pairs.out)) == sorted(RETRIEVAL)
    scored = kbc("evaluate", embed_run, DATA / "similarity.tsv")  # sentence1, sentence2, score
    assert scored.code == 0, scored.err
    assert -1 <= json.loads(scored.out)["spearman"] <= 1


def test_embed_writes_npy_and_json_lines(kbc, embed_run, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\n\nshe sings\nwater flows\n")
    assert kbc("embed", embed_run, "-i", texts, "-o", tmp_path / "v.npy").code == 0
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    result = kbc("embed", embed_run / "model.keras", "-i", texts, "-o", tmp_path / "v.jsonl")
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert [line["text"] for line in lines] == ["the cat sat", "she sings", "water flows"]
    np.testing.assert_allclose([line["vector"] for line in lines], vectors, atol=1e-6)
    stdout = kbc("embed", embed_run, stdin="water flows\n")
    assert json.loads(stdout.out)["text"] == "water flows"
    assert_one_line_error(kbc("embed", embed_run, "-i", texts, "-o", tmp_path / "v.npy"),
                          "already exists")
    assert_one_line_error(kbc("embed", embed_run, "-i", texts, "-o", tmp_path / "v.csv"),
                          "write vectors to a .npy or .jsonl file")


@pytest.mark.parametrize("text, message", [
    ("anchor,answer\nthe cat,a cat\n", "pairs.csv, line 2, column 'positive': missing"),
    ("anchor,positive\nthe cat,a cat\nit rained,\n",
     "pairs.csv, line 3, column 'positive': empty text"),
    ("text1,text2,score\nthe cat,a cat,high\n",
     "pairs.csv, line 2, column 'score': the score must be a number, got 'high'"),
])
def test_finetune_names_bad_pairs_in_one_line(kbc, tmp_path, text, message):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(text)
    result = kbc("finetune", "--task", "embed", "--train", pairs, "--vocab", VOCAB,
                 "--run-dir", tmp_path / "run")
    assert_one_line_error(result, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("options, message", [
    (["--loss", "triplet"], "the triplet loss needs a third column of negatives; the data has "
                            "anchor, positive"),
    (["--matryoshka-dims", "64", "16"], "Matryoshka dims [64, 16] go past the model's "
                                        "32-value vectors"),
    (["--task", "classify", "--scale", "5"], "--scale: for --task embed, not classify"),
    (["--batch-size", "32"], "the training data has 16 rows, fewer than --batch-size 32"),
    (["--length-buckets", "8", "x"], "--length-buckets: 'auto', 'none' or positive lengths, "
                                     "not 8 x"),
])
def test_finetune_refuses_embedding_options_that_do_not_fit(kbc, tmp_path, tiny_config,
                                                             options, message):
    result = kbc("finetune", "--task", "embed", "--train", DATA / "pairs.csv", "--vocab", VOCAB,
                 "--config", tiny_config, "--seq-length", 16, "--batch-size", 4,
                 "--run-dir", tmp_path / "run", *options)
    assert_one_line_error(result, message)
    assert not (tmp_path / "run").exists()


def test_evaluate_names_a_query_without_relevant_document(kbc, embed_run, tmp_path):
    options = retrieval_set(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n"
                                            "q2\td2\t0\n")
    assert_one_line_error(kbc("evaluate", embed_run, *options),
                          "queries.jsonl, line 2: query 'q2' has no relevant document in the "
                          "corpus")
    assert_one_line_error(kbc("evaluate", embed_run, *options[:4]),
                          "--queries, --corpus and --relevance go together")
