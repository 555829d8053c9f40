"""`Squad`: extractive question answering as `kbc finetune --task squad` runs it."""

from keras_bert_core.errors import ConfigError, DataError
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.tasks.question_answering.decoding import answers, best_null_score_threshold
from keras_bert_core.tasks.question_answering.features import squad_features
from keras_bert_core.tasks.question_answering.scores import squad_metrics
from keras_bert_core.tasks.question_answering.squad import load_squad
from keras_bert_core.tasks.task import Task


class Squad(Task):
    """Extractive question answering on SQuAD v1.1 / v2.0 JSON."""

    name = "squad"

    def load(self, path, labeled=True):
        return load_squad(path)

    def check_data(self, data, source):
        if not isinstance(data, list):
            raise DataError(f"{source} is not a question-answering task; "
                            "choose the --task that fits it")

    def serving_requests(self, data, count):
        return [{"question": e.question, "context": e.context} for e in data[:count]]

    def learn_labels(self, data):
        # SQuAD 2.0: unanswerable questions exist, so "no answer" is a possible prediction.
        self.settings["version_2"] = any(example.is_impossible for example in data)

    def build_model(self, encoder, preprocessor=None):
        return BertSpanLabeler(encoder, **self.model_arguments(preprocessor))

    def _features(self, data, preprocessor):
        s = self.settings
        if s["seq_length"] <= s["max_query_length"] + 3:
            raise ConfigError(
                f"--seq-length {s['seq_length']} leaves no room for the context after a "
                f"question of --max-query-length {s['max_query_length']} wordpieces and 3 "
                f"special tokens: raise --seq-length above {s['max_query_length'] + 3} or "
                "lower --max-query-length")
        return squad_features(data, preprocessor.tokenizer, s["seq_length"], s["doc_stride"],
                              s["max_query_length"])

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        features = self._features(data, preprocessor)
        return features.dataset(batch_size, training, seed=seed), len(features)

    def _logits(self, model, data, preprocessor, batch_size):
        """`(features, start_logits, end_logits)` of `model` on `data`."""
        features = self._features(data, preprocessor)
        logits = model.predict(features.inputs, batch_size=batch_size, verbose=0)
        return features, logits["start_logits"], logits["end_logits"]

    def _answers(self, data, features, start_logits, end_logits):
        return answers(data, features, start_logits, end_logits,
                       max_answer_length=self.settings["max_answer_length"],
                       null_score_threshold=self.null_score_threshold())

    def null_score_threshold(self):
        """The run's `--null-score-threshold` for a SQuAD 2.0 model; None for SQuAD 1.1,
        whose model always answers its best span."""
        return self.settings["null_score_threshold"] if self.settings.get("version_2") else None

    def _evaluate(self, model, data, preprocessor, batch_size):
        """Exact match and F1 of the answers kbc gives (no answer when `[CLS]` outscores the
        best span by more than `--null-score-threshold`, for a SQuAD 2.0 model). On data
        with unanswerable questions also the null-score threshold with the best F1, and the
        scores at it (see `best_null_score_threshold`)."""
        logits = self._logits(model, data, preprocessor, batch_size)
        answers = self._answers(data, *logits)
        metrics = squad_metrics({answer["id"]: answer["answer"] for answer in answers}, data)
        if any(example.is_impossible for example in data):
            best = best_null_score_threshold(
                data, *logits, max_answer_length=self.settings["max_answer_length"])
            metrics.update({"best_null_score_threshold": best["null_score_threshold"],
                            "exact_match_at_best_threshold": best["exact_match"],
                            "f1_at_best_threshold": best["f1"]})
        return metrics

    def _predict(self, model, data, preprocessor, batch_size):
        # The answer text without its offsets: the output kbc predict has always given.
        return [{key: answer[key] for key in ("id", "question", "answer")}
                for answer in self._answers(
                    data, *self._logits(model, data, preprocessor, batch_size))]
