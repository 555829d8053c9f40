"""Metrics of embedding models: retrieval over a corpus (recall@k, MRR@10, nDCG@10) and the
Spearman correlation of cosine similarities with gold scores, as sentence-transformers'
`InformationRetrievalEvaluator` and `EmbeddingSimilarityEvaluator` compute them."""

import numpy as np

RANKING_DEPTH = 10  # MRR@10 and nDCG@10


def _unit(vectors):
    vectors = np.asarray(vectors, "float32")
    if vectors.ndim != 2:
        raise ValueError(f"expected vectors of shape [count, dim], got shape {vectors.shape}")
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def top_documents(query_vectors, corpus_vectors, k, query_batch=256, corpus_batch=16384):
    """The `k` corpus rows most cosine-similar to each query, best first: int64 [Q, k].

    Scores one block of `query_batch` x `corpus_batch` at a time and keeps a running top
    `k`, so a corpus of any size never makes one [Q, corpus] matrix. Of equal scores, those
    kept rank the earlier corpus row first.

    Example:
    >>> top_documents([[1.0, 0.0]], [[0.0, 1.0], [1.0, 0.1], [1.0, -0.5]], k=2).tolist()
    [[1, 2]]
    """
    queries, corpus = _unit(query_vectors), _unit(corpus_vectors)
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"query vectors have width {queries.shape[1]}, corpus vectors "
                         f"{corpus.shape[1]}")
    k = min(k, len(corpus))
    rows = []
    for start in range(0, len(queries), query_batch):
        block = queries[start:start + query_batch]
        best_scores = np.full((len(block), 0), -np.inf, "float32")
        best_ids = np.zeros((len(block), 0), "int64")
        for offset in range(0, len(corpus), corpus_batch):
            scores = block @ corpus[offset:offset + corpus_batch].T
            ids = np.broadcast_to(np.arange(offset, offset + scores.shape[1]), scores.shape)
            if scores.shape[1] > k:  # the block's top k, unordered: linear time
                keep = np.argpartition(-scores, k - 1, axis=1)[:, :k]
                scores = np.take_along_axis(scores, keep, axis=1)
                ids = np.take_along_axis(ids, keep, axis=1)
            scores = np.concatenate([best_scores, scores], axis=1)
            ids = np.concatenate([best_ids, ids], axis=1)
            # Descending score, then ascending id, per row.
            order = np.lexsort((ids, -scores), axis=1)[:, :k]
            best_scores = np.take_along_axis(scores, order, axis=1)
            best_ids = np.take_along_axis(ids, order, axis=1)
        rows.append(best_ids)
    return np.concatenate(rows) if rows else np.zeros((0, k), "int64")


def retrieval_metrics(query_vectors, corpus_vectors, relevant, ks=(1, 10), **batches):
    """recall@k for each of `ks`, MRR@10 and nDCG@10 of retrieving `relevant` documents by
    cosine similarity, averaged over the queries.

    recall@k: the share of a query's relevant documents among its top k; MRR@10: 1 / the
    rank of the first relevant document within the top 10 (else 0); nDCG@10: binary
    relevance, DCG over the ideal DCG.

    Args:
        query_vectors: float [Q, D].
        corpus_vectors: float [N, D].
        relevant: for each query, the corpus rows relevant to it (a non-empty collection).
        ks: the cut-offs of recall.
        **batches: `query_batch`, `corpus_batch` of `top_documents`.

    Example:
    >>> corpus = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]
    >>> metrics = retrieval_metrics([[0.0, 1.0], [1.0, 0.2]], corpus, [{1}, {2}], ks=(1, 2))
    >>> metrics["recall@1"], metrics["recall@2"], metrics["mrr@10"]
    (0.5, 1.0, 0.75)
    """
    relevant = [{int(row) for row in rows} for rows in relevant]
    if len(relevant) != len(query_vectors):
        raise ValueError(f"{len(query_vectors)} query vectors but {len(relevant)} sets of "
                         "relevant documents")
    for index, rows in enumerate(relevant):
        if not rows:
            raise ValueError(f"query {index} has no relevant document")
        if min(rows) < 0 or max(rows) >= len(corpus_vectors):
            raise ValueError(f"query {index}'s relevant rows {sorted(rows)} are not all in the "
                             f"corpus of {len(corpus_vectors)}")
    depth = max(*ks, RANKING_DEPTH)
    top = top_documents(query_vectors, corpus_vectors, depth, **batches)
    hits = np.array([[row in rows for row in ranked]
                     for ranked, rows in zip(top, relevant, strict=True)],
                    "float64").reshape(len(relevant), -1)
    counts = np.array([len(rows) for rows in relevant], "float64")
    metrics = {f"recall@{k}": float(np.mean(hits[:, :k].sum(1) / counts)) for k in ks}
    first = hits[:, :RANKING_DEPTH]
    ranks = np.argmax(first, axis=1) + 1
    metrics["mrr@10"] = float(np.mean(np.where(first.any(1), 1.0 / ranks, 0.0)))
    discounts = 1.0 / np.log2(np.arange(2, first.shape[1] + 2))
    ideal = np.array([discounts[:min(int(c), first.shape[1])].sum() for c in counts])
    metrics["ndcg@10"] = float(np.mean((first * discounts).sum(1) / ideal))
    return metrics


def _ranks(values):
    """1-based ranks of `values`, ties sharing their average rank."""
    values = np.asarray(values, "float64")
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    unique, inverse = np.unique(values, return_inverse=True)
    return (np.bincount(inverse, ranks) / np.bincount(inverse))[inverse] \
        if len(unique) < len(values) else ranks


def spearman(a, b):
    """Spearman's rank correlation of `a` and `b` (ties get their average rank).

    Example:
    >>> round(spearman([1, 2, 3, 4], [10, 20, 30, 25]), 6)
    0.8
    """
    ranks_a, ranks_b = _ranks(a), _ranks(b)
    if len(ranks_a) != len(ranks_b) or len(ranks_a) < 2:
        raise ValueError(f"spearman needs two sequences of the same length >= 2, got "
                         f"{len(ranks_a)} and {len(ranks_b)}")
    ranks_a, ranks_b = ranks_a - ranks_a.mean(), ranks_b - ranks_b.mean()
    denominator = np.sqrt((ranks_a**2).sum() * (ranks_b**2).sum())
    if denominator == 0:
        raise ValueError("spearman is undefined when all values of one side are equal")
    return float((ranks_a * ranks_b).sum() / denominator)


def similarity_correlation(vectors1, vectors2, scores):
    """Spearman correlation of cos(vectors1[i], vectors2[i]) with the gold `scores`.

    Example:
    >>> round(similarity_correlation([[1, 0], [1, 0], [1, 0]], [[1, 0], [1, 1], [0, 1]],
    ...                              [5.0, 3.0, 0.0]), 6)
    1.0
    """
    cosine = (_unit(vectors1) * _unit(vectors2)).sum(1)
    return spearman(cosine, scores)
