"""Embedding models (sentence vectors): their training data, metrics and serving.

- `pairs`: `load_pairs` reads (anchor, positive[, negative]) or (text1, text2, score) files
  into `PairsData`; `unique_text_batches` batches them without a text twice in one batch
  (a repeated text would be a false negative of the contrastive loss);
- `retrieval`: `load_retrieval` reads an evaluation set in BEIR's layout (queries, corpus,
  relevance) into `RetrievalData`;
- `metrics`: `retrieval_metrics` (recall@k, MRR@10, nDCG@10 over a corpus of any size) and
  `similarity_correlation` (Spearman of cosine similarities with gold scores);
- `fine_tuning`: `Embed`, the task `kbc finetune --task embed` runs (`BertEmbedder` on
  pairs: the contrastive loss, or the cosine-similarity loss on scored pairs), and
  `score_embedder`, its metrics;
- `serving`: `TextEmbedding` serves a `BertEmbedder`'s vectors (with its prompts),
  `SentenceEmbedding` a bare encoder as a text embedding model.
"""

from keras_bert_core.tasks.embedding.metrics import (
    retrieval_metrics,
    similarity_correlation,
    spearman,
    top_documents,
)
from keras_bert_core.tasks.embedding.pairs import PairsData, load_pairs, unique_text_batches
from keras_bert_core.tasks.embedding.retrieval import (
    RetrievalData,
    load_retrieval,
    retrieval_from_pairs,
)
from keras_bert_core.tasks.embedding.serving import SentenceEmbedding, TextEmbedding

__all__ = ["PairsData", "RetrievalData", "SentenceEmbedding", "TextEmbedding", "load_pairs",
           "load_retrieval", "retrieval_from_pairs", "retrieval_metrics",
           "similarity_correlation", "spearman", "top_documents", "unique_text_batches"]
