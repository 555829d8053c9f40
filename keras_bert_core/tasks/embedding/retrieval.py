"""Retrieval evaluation data, in BEIR's layout: a queries file and a corpus file (CSV, TSV
or JSON lines with `_id` (or `id`) and `text` columns; a corpus `title`, when there is one,
goes before its text) and a relevance file (`query-id`, `corpus-id`, optional `score`: rows
scored 0 or less are not relevant). Every query needs a relevant document in the corpus."""

from __future__ import annotations

import dataclasses

from keras_bert_core.errors import DataError
from keras_bert_core.tasks.records import field, read_records, text_field

ID_COLUMNS = ("_id", "id")
QUERY_ID, DOCUMENT_ID, RELEVANCE_SCORE = "query-id", "corpus-id", "score"


@dataclasses.dataclass
class RetrievalData:
    """Queries, a corpus, and for each query the corpus rows relevant to it.

    Args:
        query_ids, queries: the queries' ids and texts.
        document_ids, documents: the corpus's ids and texts.
        relevant: for each query, the set of its relevant corpus rows.

    Example:
    >>> data = RetrievalData(["q1"], ["who wrote it?"], ["d1", "d2"], ["Ada did.", "Rain."],
    ...                      [{0}])
    >>> len(data), data.document_ids[min(data.relevant[0])]
    (1, 'd1')
    """

    query_ids: list
    queries: list
    document_ids: list
    documents: list
    relevant: list

    def __len__(self):
        return len(self.queries)


def _texts_by_id(path, titled):
    """`(ids, texts)` of a queries or corpus file, in file order; each id once."""
    ids, texts, lines = [], [], {}
    for line, record in read_records(path):
        id_column = next((name for name in ID_COLUMNS if name in record), ID_COLUMNS[0])
        key = str(field(record, id_column, path, line))
        if key in lines:
            raise DataError(f"id {key!r} is already on line {lines[key]}", path=path,
                            line=line, column=id_column)
        text = text_field(record, "text", path, line)
        title = record.get("title") if titled else None
        if isinstance(title, str) and title.strip():
            text = f"{title} {text}"
        if not text.strip():
            raise DataError("empty text", path=path, line=line, column="text")
        lines[key] = line
        ids.append(key)
        texts.append(text)
    if not ids:
        raise DataError("no records (only a header?)", path=path)
    return ids, texts, lines


def load_retrieval(queries_path, corpus_path, relevance_path):
    """Reads a retrieval evaluation set (BEIR's layout, see the module docstring).

    Raises:
        DataError: naming the file and line of a missing column or empty text, a repeated
            id, a relevance row naming an unknown query or document, or a query without
            a relevant document in the corpus.

    Example:
    >>> import os
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> def write(name, text):
    ...     path = os.path.join(folder, name)
    ...     _ = open(path, "w").write(text)
    ...     return path
    >>> data = load_retrieval(
    ...     write("queries.jsonl", '{"_id": "q1", "text": "who wrote it?"}\\n'),
    ...     write("corpus.jsonl", '{"_id": "d1", "text": "Rain."}\\n'
    ...                           '{"_id": "d2", "title": "Ada", "text": "She wrote it."}\\n'),
    ...     write("qrels.tsv", "query-id\\tcorpus-id\\tscore\\nq1\\td2\\t1\\n"))
    >>> data.queries, data.documents, data.relevant
    (['who wrote it?'], ['Rain.', 'Ada She wrote it.'], [{1}])
    """
    query_ids, queries, query_lines = _texts_by_id(queries_path, titled=False)
    document_ids, documents, _ = _texts_by_id(corpus_path, titled=True)
    query_rows = {key: row for row, key in enumerate(query_ids)}
    document_rows = {key: row for row, key in enumerate(document_ids)}
    relevant = [set() for _ in queries]
    for line, record in read_records(relevance_path):
        query = str(field(record, QUERY_ID, relevance_path, line))
        document = str(field(record, DOCUMENT_ID, relevance_path, line))
        if query not in query_rows:
            raise DataError(f"query {query!r} is not in {queries_path}", path=relevance_path,
                            line=line, column=QUERY_ID)
        if document not in document_rows:
            raise DataError(f"document {document!r} is not in the corpus {corpus_path}",
                            path=relevance_path, line=line, column=DOCUMENT_ID)
        score = record.get(RELEVANCE_SCORE)
        try:
            score = 1.0 if score in (None, "") else float(score)
        except (TypeError, ValueError):
            raise DataError(f"the score must be a number, got {score!r}", path=relevance_path,
                            line=line, column=RELEVANCE_SCORE) from None
        if score > 0:
            relevant[query_rows[query]].add(document_rows[document])
    for key, rows in zip(query_ids, relevant, strict=True):
        if not rows:
            raise DataError(f"query {key!r} has no relevant document in the corpus "
                            f"{corpus_path} (by {relevance_path})", path=queries_path,
                            line=query_lines[key])
    return RetrievalData(query_ids, queries, document_ids, documents, relevant)


def retrieval_from_pairs(pairs):
    """A retrieval set made of pairs (`PairsData`): the distinct anchors are the queries,
    the distinct texts of the other columns the corpus, and each anchor's positives its
    relevant documents (its negatives, and everyone else's texts, are there to be missed).

    Example:
    >>> from keras_bert_core.tasks.embedding.pairs import PairsData
    >>> data = retrieval_from_pairs(PairsData((["q1", "q2", "q1"], ["d1", "d2", "d3"],
    ...                                        ["d2", "d1", "d4"]), ("a", "p", "n")))
    >>> data.queries, data.documents, data.relevant
    (['q1', 'q2'], ['d1', 'd2', 'd3', 'd4'], [{0, 2}, {1}])
    """
    documents = {}
    for row in zip(*pairs.columns[1:], strict=True):
        for text in row:
            documents.setdefault(text, len(documents))
    queries = {}
    for anchor in pairs.columns[0]:
        queries.setdefault(anchor, len(queries))
    relevant = [set() for _ in queries]
    for anchor, positive in zip(pairs.columns[0], pairs.columns[1], strict=True):
        relevant[queries[anchor]].add(documents[positive])
    return RetrievalData(list(queries), list(queries), list(documents), list(documents),
                         relevant)
