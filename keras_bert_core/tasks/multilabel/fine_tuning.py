"""`MultiLabel`: multi-label classification as `kbc finetune --task multilabel` runs it."""

from keras_bert_core.errors import DataError
from keras_bert_core.models.multi_label_classifier import BertMultiLabelClassifier
from keras_bert_core.tasks.multilabel.answers import answers, decide, sigmoid
from keras_bert_core.tasks.multilabel.data import (
    MultiLabelData,
    load_multilabel,
    multilabel_dataset,
)
from keras_bert_core.tasks.multilabel.scores import multilabel_scores
from keras_bert_core.tasks.multilabel.thresholds import tune_thresholds
from keras_bert_core.tasks.task import Task


class MultiLabel(Task):
    """Texts with any number of labels each: CSV or TSV with the labels joined by the
    setting `label_delimiter` (default ","), or JSON lines with a list; after training,
    each label's threshold is tuned on the validation data (`tune`).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fast", "cheap", "phone"]
    >>> task = MultiLabel({"label_names": ["cheap", "fast"], "seq_length": 8})
    >>> model = task.build_model(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=len(vocab))), kbc.BertPreprocessor(vocab, seq_length=8))
    >>> data = MultiLabelData(["fast phone", "cheap phone"],
    ...                       np.array([[0, 1], [1, 0]], "float32"), ["cheap", "fast"])
    >>> task.tune(model, data)
    >>> len(model.thresholds), sorted(task.evaluate(model, data))[:3]
    (2, ['exact_match', 'labels', 'macro_f1'])
    """

    name = "multilabel"
    tunes_on_validation = True

    def load(self, path, labeled=True):
        s = self.settings
        return load_multilabel(path, s["text_column"], s["label_column"] if labeled else None,
                               s["label_delimiter"], label_names=s.get("label_names"))

    def from_lines(self, lines):
        return MultiLabelData(list(lines), None, None)

    def check_data(self, data, source):
        if not isinstance(data, MultiLabelData):
            raise DataError(f"{source} is not a multi-label task; choose the --task that "
                            "fits it")

    def serving_requests(self, data, count):
        return [{"text": text} for text in data.texts[:count]]

    def learn_labels(self, data):
        self.settings["label_names"] = data.label_names
        # Each label's share of the training texts: where the model's training starts.
        self.settings["label_priors"] = [round(float(p), 6) for p in data.labels.mean(0)]

    def build_model(self, encoder, preprocessor=None):
        model = BertMultiLabelClassifier(encoder, num_labels=len(self.settings["label_names"]),
                                         window_aggregation=self.window_aggregation(),
                                         **self.model_arguments(preprocessor))
        if self.settings.get("label_priors") is not None:
            model.start_from_priors(self.settings["label_priors"])
        return model

    def distiller(self, teacher, student, options):
        raise DataError("distilling a multi-label model is not supported yet (its soft "
                        "targets are one sigmoid per label, not a softmax)")

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        return multilabel_dataset(data, preprocessor, batch_size, training, seed=seed), len(data)

    def _tune(self, model, data, preprocessor, batch_size):
        """Each label's decision threshold (`model.thresholds`): the one that maximizes
        its F1 on `data`."""
        logits = self._outputs(model, data, preprocessor, batch_size)
        model.thresholds = tune_thresholds(sigmoid(logits), data.labels)

    def _evaluate(self, model, data, preprocessor, batch_size):
        logits = self._outputs(model, data, preprocessor, batch_size)
        predicted = decide(logits, model.decision_thresholds())
        return multilabel_scores(data.labels, predicted, self.settings["label_names"])

    def _predict(self, model, data, preprocessor, batch_size):
        logits = self._outputs(model, data, preprocessor, batch_size)
        return [{"text": text, **answer} for text, answer in zip(
            data.texts, answers(logits, self.settings["label_names"],
                                model.decision_thresholds()), strict=True)]

