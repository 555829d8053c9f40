"""Embedding tasks' data and metrics: pairs files, batches without repeated texts, BEIR-style
retrieval sets, and retrieval / similarity metrics against numbers computed by hand."""

import pathlib

import numpy as np
import pytest

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.embedding import (
    load_pairs,
    load_retrieval,
    retrieval_metrics,
    similarity_correlation,
    spearman,
    top_documents,
    unique_text_batches,
)

CORPUS = np.array([[1, 0], [0, 1], [1, 1], [-1, 0], [1, -0.2]], "float32")
QUERIES = np.array([[1, 0.1], [0, 1]], "float32")


def test_retrieval_metrics_on_a_hand_computed_example():
    # Cosine rankings: query 0 -> d0 .995, d4 .956, d2 .774, d1 .100, d3 -.995;
    # query 1 -> d1 1, d2 .707, d0 0, d3 0 (a tie: the earlier row first), d4 -.196.
    assert top_documents(QUERIES, CORPUS, k=5).tolist() == [[0, 4, 2, 1, 3], [1, 2, 0, 3, 4]]
    metrics = retrieval_metrics(QUERIES, CORPUS, [{2, 1}, {1}], ks=(1, 3))
    # Query 0 finds its two relevant documents at ranks 3 and 4, query 1 its one at rank 1.
    ndcg_0 = (1 / np.log2(4) + 1 / np.log2(5)) / (1 + 1 / np.log2(3))  # 0.5707
    assert metrics["recall@1"] == pytest.approx((0 + 1) / 2)
    assert metrics["recall@3"] == pytest.approx((1 / 2 + 1) / 2)
    assert metrics["mrr@10"] == pytest.approx((1 / 3 + 1) / 2)
    assert metrics["ndcg@10"] == pytest.approx((ndcg_0 + 1) / 2)
    assert sorted(metrics) == ["mrr@10", "ndcg@10", "recall@1", "recall@3"]


def test_a_large_corpus_is_scored_block_by_block_with_the_same_ranking():
    rng = np.random.default_rng(0)
    queries, corpus = rng.normal(size=(37, 16)), rng.normal(size=(1000, 16))
    unit = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    expected = np.argsort(-(queries @ unit.T), axis=1)[:, :10]
    blocks = top_documents(queries, corpus, 10, query_batch=8, corpus_batch=64)
    np.testing.assert_array_equal(blocks, expected)
    relevant = [{int(row[3])} for row in expected]  # each at rank 4
    metrics = retrieval_metrics(queries, corpus, relevant, query_batch=8, corpus_batch=64)
    assert metrics["recall@1"] == 0 and metrics["recall@10"] == 1
    assert metrics["mrr@10"] == pytest.approx(0.25)
    assert metrics["ndcg@10"] == pytest.approx(1 / np.log2(5))


@pytest.mark.parametrize("relevant, message", [
    ([{1}, set()], "query 1 has no relevant document"),
    ([{1}, {5}], r"query 1's relevant rows \[5\] are not all in the corpus of 5"),
    ([{1}], "2 query vectors but 1 sets"),
])
def test_retrieval_metrics_name_bad_relevance(relevant, message):
    with pytest.raises(ValueError, match=message):
        retrieval_metrics(QUERIES, CORPUS, relevant)


def test_spearman_with_ties_and_similarity_correlation():
    # Ranks [1, 2.5, 2.5, 4] and [1, 3, 2, 4]: covariance 4.5 over sqrt(4.5 * 5).
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / np.sqrt(22.5))
    # Cosines of the pairs: 1, .707, 0, -1; the gold scores rank them the other way round.
    vectors1 = [[1, 0]] * 4
    vectors2 = [[1, 0], [1, 1], [0, 1], [-1, 0]]
    assert similarity_correlation(vectors1, vectors2, [0.0, 1.0, 2.0, 3.0]) == \
        pytest.approx(-1.0)
    with pytest.raises(ValueError, match="all values of one side are equal"):
        spearman([1, 1, 1], [1, 2, 3])


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, text", [
    ("pairs.csv", "anchor,positive\nwho wrote it?,Ada wrote it.\nrain?,\"It rains, a lot.\"\n"),
    ("pairs.tsv", "anchor\tpositive\nwho wrote it?\tAda wrote it.\nrain?\tIt rains, a lot.\n"),
    ("pairs.jsonl", '{"anchor": "who wrote it?", "positive": "Ada wrote it."}\n\n'
                    '{"anchor": "rain?", "positive": "It rains, a lot."}\n'),
])
def test_pairs_are_read_from_csv_tsv_and_jsonl(tmp_path, name, text):
    data = load_pairs(write(tmp_path / name, text))
    assert data.names == ("anchor", "positive") and not data.scored
    assert data.columns == (["who wrote it?", "rain?"], ["Ada wrote it.", "It rains, a lot."])


def test_triplets_scored_pairs_and_named_columns(tmp_path):
    triplets = load_pairs(write(tmp_path / "t.csv", "anchor,positive,negative,extra\na,b,c,d\n"))
    assert triplets.names == ("anchor", "positive", "negative")
    assert triplets.columns == (["a"], ["b"], ["c"])
    scored = load_pairs(write(tmp_path / "s.jsonl",
                              '{"text1": "a", "text2": "b", "score": 1}\n'
                              '{"text1": "c", "text2": "d", "score": "0.25"}\n'))
    assert scored.scored and scored.names == ("text1", "text2")
    assert scored.scores.tolist() == [1.0, 0.25]
    named = load_pairs(write(tmp_path / "n.csv", "q,d,s\na,b,2\n"), columns=("q", "d"),
                       score_column="s")
    assert named.columns == (["a"], ["b"]) and named.scores.tolist() == [2.0]


@pytest.mark.parametrize("name, text, message", [
    ("p.csv", "anchor,text\na,b\n", r"p.csv, line 2, column 'positive': missing"),
    ("p.csv", "anchor,positive\na,b\nc,  \n", r"p.csv, line 3, column 'positive': empty text"),
    ("p.jsonl", '{"anchor": "a", "positive": 3}\n',
     r"p.jsonl, line 1, column 'positive': expected text, got int 3"),
    ("p.csv", "text1,text2,score\na,b,1\nc,d,high\n",
     r"p.csv, line 3, column 'score': the score must be a number, got 'high'"),
    ("p.jsonl", '{"text1": "a", "text2": "b", "score": null}\n',
     r"p.jsonl, line 1, column 'score': missing"),
    ("p.csv", "anchor,positive\n", r"p.csv: no pairs"),
])
def test_pairs_errors_name_file_line_and_column(tmp_path, name, text, message):
    with pytest.raises(DataError, match=message) as error:
        load_pairs(write(tmp_path / name, text))
    assert "\n" not in str(error.value)


def test_batches_never_hold_a_text_twice():
    rng = np.random.default_rng(3)
    # 200 pairs over 40 anchors and 60 positives: many repeats.
    anchors = [f"a{i}" for i in rng.integers(0, 40, 200)]
    positives = [f"p{i}" for i in rng.integers(0, 60, 200)]
    batches = unique_text_batches((anchors, positives), 8, seed=1, drop_remainder=False)
    for batch in batches:
        texts = [anchors[i] for i in batch] + [positives[i] for i in batch]
        assert len(set(texts)) == len(texts)
    assert sorted(i for batch in batches for i in batch) == list(range(200))  # each once
    full = unique_text_batches((anchors, positives), 8, seed=1)
    assert full and all(len(batch) == 8 for batch in full)
    assert full == unique_text_batches((anchors, positives), 8, seed=1)  # reproducible
    assert full != unique_text_batches((anchors, positives), 8, seed=2)
    # A text shared by every pair: one pair per batch at most, so no full batch of 2.
    assert unique_text_batches((["q"] * 3, ["x", "y", "z"]), 2) == []


def beir_files(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td1\t1\nq2\td3\t0\n"):
    queries = write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "who wrote it?"}\n'
                                                '{"_id": "q2", "text": "rain?"}\n')
    corpus = write(tmp_path / "corpus.csv", "id,title,text\nd1,,It rains.\nd2,Ada,She wrote it."
                                            "\nd3,,Sun.\n")
    return queries, corpus, write(tmp_path / "qrels.tsv", qrels)


def test_retrieval_sets_in_beir_layout(tmp_path):
    data = load_retrieval(*beir_files(tmp_path))
    assert data.query_ids == ["q1", "q2"] and data.document_ids == ["d1", "d2", "d3"]
    assert data.documents == ["It rains.", "Ada She wrote it.", "Sun."]
    assert data.relevant == [{1}, {0}]  # the row scored 0 is not relevant


@pytest.mark.parametrize("qrels, message", [
    ("query-id\tcorpus-id\nq1\td2\n",
     r"queries.jsonl, line 2: query 'q2' has no relevant document in the corpus"),
    ("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td3\t0\n",
     r"queries.jsonl, line 2: query 'q2' has no relevant document in the corpus"),
    ("query-id\tcorpus-id\nq1\td9\n",
     r"qrels.tsv, line 2, column 'corpus-id': document 'd9' is not in the corpus"),
    ("query-id\tcorpus-id\nq7\td1\n",
     r"qrels.tsv, line 2, column 'query-id': query 'q7' is not in"),
    ("query\tcorpus-id\nq1\td1\n", r"qrels.tsv, line 2, column 'query-id': missing"),
])
def test_retrieval_set_errors_are_one_line(tmp_path, qrels, message):
    with pytest.raises(DataError, match=message) as error:
        load_retrieval(*beir_files(tmp_path, qrels))
    assert "\n" not in str(error.value)


def test_repeated_ids_are_named(tmp_path):
    queries, corpus, qrels = beir_files(tmp_path)
    write(corpus, "id,text\nd1,a\nd2,b\nd1,c\n")
    with pytest.raises(DataError, match=r"corpus.csv, line 4, column 'id': id 'd1' is already "
                                        "on line 2"):
        load_retrieval(queries, corpus, qrels)


def test_the_embed_task_compiles_scored_pairs_with_the_cosine_loss():
    import keras_bert_core as kbc
    from keras_bert_core.models.embedding_losses import ContrastiveLoss, CosineSimilarityLoss
    from keras_bert_core.tasks.fine_tuning import TASKS

    data_folder = pathlib.Path(__file__).parents[1] / "text" / "data" / "tasks"
    task = TASKS["embed"]({"seq_length": 16})
    pairs = task.load(data_folder / "pairs.csv")
    task.learn_labels(pairs)
    assert type(task.compile_arguments()["loss"]) is ContrastiveLoss
    scored = task.load(data_folder / "similarity.tsv")  # sentence1, sentence2, score
    task.learn_labels(scored)
    assert task.settings["pair_columns"] == ["sentence1", "sentence2"]
    assert isinstance(task.compile_arguments()["loss"], CosineSimilarityLoss)
    preprocessor = kbc.BertPreprocessor(str(data_folder / "vocab.txt"), seq_length=16)
    model = task.build_model(kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=preprocessor.tokenizer.vocabulary_size(),
        max_position_embeddings=16)), preprocessor)
    model.compile(optimizer="sgd", **task.compile_arguments())
    assert isinstance(model.loss, CosineSimilarityLoss)  # kbc finetune compiles so
    # `fit` batches: the texts' columns and their scores (kbc finetune fits them).
    dataset, rows = task.dataset(scored, preprocessor, 2, training=True, seed=0)
    assert rows == 2
    (columns, scores), = dataset.take(1)
    assert len(columns) == 2 and columns[0].shape == (2,) and scores.dtype == "float32"
    assert set(scores.numpy()) <= set(scored.scores)
    assert set(task.evaluate(model, scored)) == {"spearman"}


@pytest.mark.parametrize("settings, columns, message", [
    ({"loss": "triplet"}, 2, "the triplet loss needs a third column of negatives"),
    ({"loss": "contrastive"}, "scored", "scored pairs .* train with the cosine loss"),
    ({"loss": "cosine"}, 3, "the cosine loss needs a score column"),
    ({"loss": "hinge"}, 2, "unknown embedding loss 'hinge'"),
])
def test_the_embed_task_refuses_a_loss_that_does_not_fit_the_data(settings, columns, message):
    from keras_bert_core.cli.tasks import EMBED_LOSSES
    from keras_bert_core.tasks.embedding.fine_tuning import LOSSES, Embed
    from keras_bert_core.tasks.embedding.pairs import PairsData

    assert EMBED_LOSSES == LOSSES  # kbc's --loss choices, kept without TensorFlow
    data = (PairsData((["a"], ["b"]), ("text1", "text2"), np.ones(1, "float32"))
            if columns == "scored" else
            PairsData((["a"], ["b"], ["c"])[:columns], ("anchor", "positive", "negative")))
    with pytest.raises(ValueError, match=message):
        Embed(settings).learn_labels(data)


def test_an_embed_task_started_from_a_sentence_transformers_folder_keeps_its_modules():
    import json

    import keras_bert_core as kbc
    from keras_bert_core.tasks.fine_tuning import TASKS

    data = pathlib.Path(__file__).parents[1] / "checkpoints" / "data" / "sentence_transformers"
    pretrained, preprocessor = kbc.from_preset(data / "kbc_written")  # 2 Dense, prompts
    texts = json.loads((data / "texts.json").read_text())["texts"][:3]
    task = TASKS["embed"]({"seq_length": 16})
    task.adopt(pretrained.encoder)  # an encoder alone: nothing to keep
    assert "embedder" not in task.settings
    task.adopt(pretrained)  # as kbc finetune --task embed --checkpoint FOLDER does
    model = task.build_model(pretrained.encoder, preprocessor)
    assert model.task_settings["embedder"]["dense_layers"] == pretrained.dense_layers
    assert model.prompts == pretrained.prompts and model.pooling == pretrained.pooling
    np.testing.assert_allclose(model.predict(texts, verbose=0),
                               pretrained.predict(texts, verbose=0), atol=1e-6)
