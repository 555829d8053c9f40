"""`Task`: a fine-tuning task as an object, what every task shares: its settings (data
columns, label names, lengths), which its model carries (`TaskModel.task_settings`), and the
steps from data to answers; each task module defines its own (`classification.Classify`,
`question_answering.fine_tuning.Squad`, ...), `fine_tuning.TASKS` names them."""

from keras_bert_core.errors import DataError
from keras_bert_core.models.text_inputs import read_with_one_iterator
from keras_bert_core.text.long_text_preprocessor import LongTextPreprocessor

# The settings every task has, and their defaults (`kbc finetune`'s data options).
DEFAULT_SETTINGS = {
    "text_column": "text",
    "pair_column": "text_b",
    "label_column": "label",
    "label_delimiter": ",",
    "question_column": "question",
    "choices_column": "choices",
    "context_column": None,
    "doc_stride": 128,
    "max_query_length": 64,
    "max_answer_length": 30,
    "null_score_threshold": 0.0,
}


def _preprocessor(model, preprocessor):
    """`preprocessor`, else the one the model carries."""
    if preprocessor is None and getattr(model, "preprocessor", None) is None:
        raise ValueError(f"{model.name!r} carries no preprocessor: pass the one it reads")
    return model.preprocessor if preprocessor is None else preprocessor


class Task:
    """One fine-tuning task.

    The methods that read a model's inputs take the `preprocessor` the model reads (by
    default the model's own, `model.preprocessor`).

    Args:
        settings: dict of the task's data settings (`DEFAULT_SETTINGS`), `seq_length`,
            `lower_case`, and what `learn_labels` adds from the training data.
    """

    name = None
    # Whether `adopt` wants the whole model a checkpoint holds, beyond its encoder.
    adopts_checkpoint_model = False
    # Whether `kbc distill` trains the student on labeled data (`--train`) with the
    # teacher's soft targets; if not, on unlabeled texts alone (`unlabeled_dataset`).
    distills_with_labels = True
    # Whether `tune` learns how the model answers from validation data (thresholds).
    tunes_on_validation = False

    def __init__(self, settings):
        self.settings = {**DEFAULT_SETTINGS, **settings, "name": self.name}

    def load(self, path, labeled=True):
        """The data of a file; without its labels if not `labeled`."""
        raise NotImplementedError

    def from_lines(self, lines):
        """Unlabeled data of text lines (pairs tab-separated; ner: words between spaces)."""
        raise DataError(f"{self.name} predictions read a data file in the task's format, not "
                        "text lines (standard input or a .txt file): pass --input FILE")

    def check_data(self, data, source):
        """Raises a `DataError` if `data` (e.g. from TFDS) is not this task's kind."""

    def learn_labels(self, data):
        """Records what the model's shape depends on (label names, number of choices)."""

    def build_model(self, encoder, preprocessor=None):
        """The task's model on `encoder`, carrying `preprocessor` and the task's settings
        (`TaskModel.task_settings`), so that its `.keras` file answers by itself."""
        raise NotImplementedError

    def adopt(self, model):
        """Takes what the task's model keeps of `model`, the whole model a `--checkpoint`
        holds (e.g. an embedding model's pooling and dense layers), before `build_model`."""

    def build_student(self, encoder, preprocessor, teacher):
        """The task's model on `encoder` for `kbc distill` to train after `teacher`."""
        return self.build_model(encoder, preprocessor)

    def distiller(self, teacher, student, options):
        """The model that trains `student` after `teacher` (`kbc distill`): a `Distiller`
        with `options`, the settings given (temperature, alpha, ...)."""
        from keras_bert_core.models import Distiller

        return Distiller(teacher, student, **options)

    def unlabeled_dataset(self, data, preprocessor, batch_size, seed=None):
        """`(batches, rows)` of unlabeled `data` for a task that distills on it alone
        (`distills_with_labels` False)."""
        raise NotImplementedError

    def compile_arguments(self):
        """`compile` arguments the task's model trains with besides its defaults (e.g. a
        loss that depends on the data); the optimizer comes from the training options."""
        return {}

    def preprocessor_for(self, preprocessor):
        """The preprocessor the task's model reads, made from `preprocessor`: with the
        setting `long_texts` `"windows"` (classify, multilabel, ner), a `LongTextPreprocessor`
        with the settings `stride` and `max_windows`."""
        if self.settings.get("long_texts") != "windows":
            return preprocessor
        return LongTextPreprocessor.from_preprocessor(
            preprocessor, self.settings.get("stride"), self.settings.get("max_windows", 16))

    def window_aggregation(self):
        """How a classifier joins a long text's windows (the setting `window_aggregation`,
        "mean" by default) when the task reads windows; None when it does not."""
        if self.settings.get("long_texts") != "windows":
            return None
        return self.settings.get("window_aggregation", "mean")

    def model_arguments(self, preprocessor):
        """What every task model is built with besides its encoder and head; the settings
        of a long-text preprocessor's windows are the preprocessor's (a preset keeps them)."""
        if isinstance(preprocessor, LongTextPreprocessor):
            self.settings.update(long_texts="windows", stride=preprocessor.stride,
                                 max_windows=preprocessor.max_windows)
        return {"preprocessor": preprocessor, "task_settings": dict(self.settings)}

    def dataset(self, data, preprocessor, batch_size, training=False, seed=None):
        """`(tf.data.Dataset, number of rows)`: `fit` batches of `data`, or features only
        when it is unlabeled."""
        raise NotImplementedError

    def evaluate(self, model, data, preprocessor=None, batch_size=32):
        """A dict of metrics of `model` on labeled `data`."""
        return self._evaluate(model, data, _preprocessor(model, preprocessor), batch_size)

    def tune(self, model, data, preprocessor=None, batch_size=32):
        """Sets what the model answers by that is learned from labeled validation `data`
        after training (a multi-label model's thresholds); most tasks have nothing to
        tune. `kbc finetune` calls it before saving the model."""
        self._tune(model, data, _preprocessor(model, preprocessor), batch_size)

    def predict(self, model, data, preprocessor=None, batch_size=32):
        """A list of JSON-ready answers of `model`, one per example of `data`."""
        return self._predict(model, data, _preprocessor(model, preprocessor), batch_size)

    def _evaluate(self, model, data, preprocessor, batch_size):
        """The model's compiled metrics on the task's batches; tasks scored on their
        answers (span QA, tagging) override it."""
        dataset, steps = self._one_pass(model, data, preprocessor, batch_size)
        metrics = model.evaluate(dataset, verbose=0, return_dict=True, **steps)
        return {name: float(value) for name, value in metrics.items()}

    def _tune(self, model, data, preprocessor, batch_size):
        """Nothing to tune by default."""

    def _predict(self, model, data, preprocessor, batch_size):
        raise NotImplementedError

    def _outputs(self, model, data, preprocessor, batch_size):
        """The model's outputs on the task's batches of `data`."""
        dataset, steps = self._one_pass(model, data, preprocessor, batch_size)
        return model.predict(dataset, verbose=0, **steps)

    def _one_pass(self, model, data, preprocessor, batch_size):
        """The task's batches of `data` and the `steps` argument with which Keras reads them
        through one iterator (`read_with_one_iterator`)."""
        steps = {}
        dataset = read_with_one_iterator(self.dataset(data, preprocessor, batch_size)[0], steps,
                                         "steps", model.distribute_strategy)
        return dataset, steps

    def serving_requests(self, data, count):
        """The first `count` examples of `data` as an export's inputs: dicts keyed by its
        serving signature's text inputs (`kbc predict`'s JSON lines)."""
        raise NotImplementedError

    def null_score_threshold(self):
        """The margin by which "no answer" must win to be answered (SQuAD 2.0); None where
        the task has no such answer."""
        return None
