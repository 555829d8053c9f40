"""`Ner`: token tagging (named entities) as `kbc finetune --task ner` runs it."""

from keras_bert_core.errors import DataError
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.tasks.task import Task
from keras_bert_core.tasks.token_classification.conll import TaggingData, load_conll
from keras_bert_core.tasks.token_classification.decoding import answers
from keras_bert_core.tasks.token_classification.features import tagging_features
from keras_bert_core.tasks.token_classification.scores import entity_scores


class Ner(Task):
    """Token tagging (named entities) on CoNLL files: a word per line, its tag last."""

    name = "ner"

    def load(self, path, labeled=True):
        return load_conll(path, tag_names=self.settings.get("label_names"),
                          tag_column=-1 if labeled else None)

    def from_lines(self, lines):
        return TaggingData([line.split() for line in lines], None, None)

    def check_data(self, data, source):
        if not isinstance(data, TaggingData):
            raise DataError(f"{source} is not a tagging task; choose the --task that fits it")

    def serving_requests(self, data, count):
        return [{"text": " ".join(words)} for words in data.sentences[:count]]

    def learn_labels(self, data):
        self.settings["label_names"] = data.tag_names

    def build_model(self, encoder, preprocessor=None):
        return BertTokenClassifier(encoder, num_classes=len(self.settings["label_names"]),
                                   **self.model_arguments(preprocessor))

    def _features(self, data, preprocessor):
        # A long-text preprocessor's windows (`kbc.LongTextPreprocessor`), else one row.
        return tagging_features(data, preprocessor.tokenizer, self.settings["seq_length"],
                                getattr(preprocessor, "stride", None),
                                getattr(preprocessor, "max_windows", None))

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        features = self._features(data, preprocessor)
        return features.dataset(batch_size, training, seed=seed), len(features)

    def _evaluate(self, model, data, preprocessor, batch_size):
        names = self.settings["label_names"]
        truth = [[names[tag] for tag in sentence] for sentence in data.tags]
        answers = self.predict(model, data, preprocessor, batch_size)
        return entity_scores(truth, [answer["tags"] for answer in answers])

    def _predict(self, model, data, preprocessor, batch_size):
        features = self._features(data, preprocessor)
        logits = model.predict(features.inputs, batch_size=batch_size, verbose=0)
        return answers(data, features, logits, self.settings["label_names"])
