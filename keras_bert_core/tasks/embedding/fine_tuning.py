"""`Embed`: fine-tuning an embedding model (`BertEmbedder`) on pairs, as `kbc finetune --task
embed` runs it: the contrastive loss with in-batch negatives on (anchor, positive[,
negative]) pairs, the cosine-similarity loss on scored pairs; scored by retrieval metrics
(or Spearman's correlation for scored pairs)."""

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import ConfigError, DataError
from keras_bert_core.models.distillation import EmbeddingDistiller
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.models.embedding_losses import (
    ContrastiveLoss,
    CosineSimilarityLoss,
    MatryoshkaLoss,
    TripletLoss,
)
from keras_bert_core.tasks.embedding.metrics import retrieval_metrics, similarity_correlation
from keras_bert_core.tasks.embedding.pairs import (
    SCORE_COLUMN,
    PairsData,
    load_pairs,
    unique_text_batches,
)
from keras_bert_core.tasks.embedding.retrieval import RetrievalData, retrieval_from_pairs
from keras_bert_core.tasks.task import Task

# What an embedding model started from another (a sentence-transformers folder) keeps of it.
ADOPTED_SETTINGS = ("pooling", "dense_layers", "normalize", "prompts", "default_prompt_name",
                    "similarity")
# The losses `kbc finetune --task embed --loss` names (default: cosine for scored pairs,
# else contrastive).
LOSSES = ("contrastive", "symmetric", "triplet", "cosine")


def embed_texts(model, texts, batch_size=32, prompt_name=None):
    """float32 [len(texts), dim] vectors of `texts` by `model` (a `BertEmbedder`), with its
    prompt `prompt_name` when it has one by that name."""
    prompts = getattr(model, "prompts", None) or {}
    chosen = {"prompt_name": prompt_name} if prompt_name in prompts else {}
    return np.asarray(model.predict(list(texts), batch_size=batch_size, verbose=0, **chosen),
                      "float32")


def score_embedder(model, data, batch_size=32):
    """Metrics of `model` on `data`: retrieval metrics (recall@1, recall@10, MRR@10,
    nDCG@10) for a `RetrievalData` or unscored pairs (each anchor retrieves its positives
    among all the pairs' texts), Spearman's correlation of the cosine similarities with the
    scores of scored pairs."""
    if isinstance(data, PairsData) and data.scored:
        first, second = (embed_texts(model, column, batch_size) for column in data.columns[:2])
        return {"spearman": similarity_correlation(first, second, data.scores)}
    if isinstance(data, PairsData):
        data = retrieval_from_pairs(data)
    queries = embed_texts(model, data.queries, batch_size, prompt_name="query")
    documents = embed_texts(model, data.documents, batch_size, prompt_name="document")
    return retrieval_metrics(queries, documents, data.relevant, ks=(1, 10))


class Embed(Task):
    """Embedding pairs (CSV, TSV or JSON lines, `load_pairs`, which finds the columns: anchor,
    positive[, negative], or text1, text2, score). The training file's kind is the task's
    settings `pair_columns` and `score_column`. Any kind of file scores a model
    (`evaluate`).

    The loss comes from the settings `loss` (one of `LOSSES`; default: `cosine` for scored
    pairs, else `contrastive`), `scale` (the contrastive losses') and `matryoshka_dims`
    (train the vectors cut to each of these widths too: `MatryoshkaLoss`); the setting
    `length_buckets` is the model's (`BertEmbedder`: how training pads each column).

    Example:
    >>> task = Embed({"loss": "symmetric", "scale": 10.0, "matryoshka_dims": [64, 32]})
    >>> loss = task.compile_arguments()["loss"]
    >>> type(loss).__name__, type(loss.loss).__name__, loss.loss.symmetric, loss.dims
    ('MatryoshkaLoss', 'ContrastiveLoss', True, (64, 32))
    """

    name = "embed"
    adopts_checkpoint_model = True
    # A student learns the teacher's vectors of any texts: no labels.
    distills_with_labels = False

    def load(self, path, labeled=True):
        if not labeled:
            raise DataError("embed predictions read text lines (a .txt file or standard "
                            "input), one text a line", path=path)
        return load_pairs(path)

    def from_lines(self, lines):
        return PairsData((list(lines),), ("text",))

    def check_data(self, data, source):
        if not isinstance(data, (PairsData, RetrievalData)):
            raise DataError(f"{source} holds no text pairs: --task embed reads pairs files "
                            "(anchor, positive[, negative] or text1, text2, score)")

    def learn_labels(self, data):
        self.settings["pair_columns"] = list(data.names)
        self.settings["score_column"] = SCORE_COLUMN if data.scored else None
        loss, columns = self.loss_name(), ", ".join(data.names)
        if data.scored and loss != "cosine":
            raise DataError(f"scored pairs (columns {columns}, score) train with the cosine "
                            f"loss, not the {loss} loss")
        if loss == "cosine" and not data.scored:
            raise DataError(f"the cosine loss needs a score column; the data has {columns}")
        if loss == "triplet" and len(data.columns) < 3:
            raise DataError(f"the triplet loss needs a third column of negatives; the data has "
                            f"{columns}")

    def loss_name(self):
        """The loss the settings name, or the default for the data's kind."""
        name = self.settings.get("loss") or ("cosine" if self.settings.get("score_column")
                                             else "contrastive")
        if name not in LOSSES:
            raise ConfigError(f"unknown embedding loss {name!r}; choose from "
                              f"{', '.join(LOSSES)}")
        return name

    def compile_arguments(self):
        name, s = self.loss_name(), self.settings
        if name == "cosine":
            loss = CosineSimilarityLoss()
        elif name == "triplet":
            loss = TripletLoss()
        else:
            loss = ContrastiveLoss(scale=s.get("scale") or 20.0, symmetric=name == "symmetric")
        if s.get("matryoshka_dims"):
            loss = MatryoshkaLoss(loss, s["matryoshka_dims"])
        return {"loss": loss}

    def adopt(self, model):
        """An embedding model to start from (a sentence-transformers folder's): its pooling,
        dense layers (with their weights), normalization, prompts and similarity."""
        if isinstance(model, BertEmbedder):
            config = model.get_config()
            self.settings["embedder"] = {name: config[name] for name in ADOPTED_SETTINGS}
            self._dense_weights = [dense.get_weights() for dense in model.denses]

    def build_model(self, encoder, preprocessor=None):
        model = BertEmbedder(encoder, **self.settings.get("embedder", {}),
                             length_buckets=self.settings.get("length_buckets", "auto"),
                             **self.model_arguments(preprocessor))
        # Started from an embedding model: its dense layers' weights (a resumed run: none
        # here, its backup has them).
        for dense, weights in zip(model.denses, getattr(self, "_dense_weights", ()),
                                  strict=False):
            dense.set_weights(weights)
        dims = self.settings.get("matryoshka_dims") or ()
        if dims and max(dims) > model.embedding_dim:
            raise ConfigError(f"Matryoshka dims {list(dims)} go past the model's "
                              f"{model.embedding_dim}-value vectors")
        return model

    def build_student(self, encoder, preprocessor, teacher):
        """A student on `encoder` with the teacher's pooling, dense layers (new weights),
        normalization and prompts; where its vectors would be of another width, a linear
        dense layer of the teacher's width comes last (as sentence-transformers' recipe)."""
        config = teacher.get_config()
        settings = {name: config[name] for name in ADOPTED_SETTINGS}
        pooling = settings["pooling"]
        width = (settings["dense_layers"][-1]["units"] if settings["dense_layers"] else
                 encoder.config.hidden_size * (1 if isinstance(pooling, str) else len(pooling)))
        if width != teacher.embedding_dim:
            settings["dense_layers"] = [*settings["dense_layers"], {
                "units": teacher.embedding_dim, "activation": "linear", "use_bias": True}]
        return BertEmbedder(encoder, **settings, **self.model_arguments(preprocessor))

    def distiller(self, teacher, student, options):
        if options:
            raise ConfigError(f"an embedding model's student learns the teacher's vectors "
                              f"(mean squared error), without labels or soft targets: "
                              f"{', '.join(sorted(options))} do not apply")
        return EmbeddingDistiller(teacher, student)

    def unlabeled_dataset(self, data, preprocessor, batch_size, seed=None):
        """Batches of the models' inputs for every distinct text of `data` (of any column),
        whole, in an order reshuffled each epoch."""
        texts = np.array(list(dict.fromkeys(text for column in data.columns
                                            for text in column)), dtype=object)
        dataset = tf.data.Dataset.from_tensor_slices(texts).shuffle(
            len(texts), seed=seed, reshuffle_each_iteration=True).batch(
            batch_size, drop_remainder=True)
        dataset = dataset.map(lambda text: preprocessor(text, static_shape=True),
                              num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE), len(texts)

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        """Batches of `((column, ...), scores)` texts (zeros for unscored pairs; the model
        preprocesses them); training batches hold no text twice (`unique_text_batches`),
        and come in a shuffled order each epoch."""
        if training:
            batches = unique_text_batches(data.columns, batch_size, seed=seed)
            if not batches and len(data) >= batch_size:
                raise DataError(f"{len(data)} pairs make no batch of {batch_size} without a "
                                "text twice in it; lower --batch-size")
            order = np.array([index for batch in batches for index in batch], "int64")
        else:
            order = np.arange(len(data))
        columns = tuple(np.array(column, dtype=object)[order] for column in data.columns)
        scores = data.scores[order] if data.scored else np.zeros(len(order), "float32")
        dataset = tf.data.Dataset.from_tensor_slices((columns, scores)).batch(
            batch_size, drop_remainder=training)
        if training:  # whole batches, so none gets a text twice
            dataset = dataset.shuffle(max(len(order) // batch_size, 1), seed=seed,
                                      reshuffle_each_iteration=True)
        # Fewer rows than a batch: their count, for the caller's message.
        return dataset.prefetch(tf.data.AUTOTUNE), len(order) or len(data)

    def _evaluate(self, model, data, preprocessor, batch_size):
        return score_embedder(model, data, batch_size)

    def _predict(self, model, data, preprocessor, batch_size):
        vectors = embed_texts(model, data.columns[0], batch_size)
        return [{"text": text, "vector": vector.tolist()}
                for text, vector in zip(data.columns[0], vectors, strict=True)]

    def serving_requests(self, data, count):
        return [{"text": text} for text in data.columns[0][:count]]
