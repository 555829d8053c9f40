"""The fine-tuning tasks by name, as `kbc finetune`, `evaluate` and `predict` run them and as
Python runs them: each (a `task.Task`, defined in its task's module) reads its data, builds
its model, makes its `fit` batches, scores and answers, from its `settings` (data columns,
label names, lengths), which the model carries (`TaskModel.task_settings`): `task_of(model)`
is the task a fine-tuned model answers.

Example: a classifier built by its task answers from its settings alone (untrained here).
>>> import keras_bert_core as kbc
>>> from keras_bert_core.tasks.fine_tuning import Classify, task_of
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film"]
>>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> task = Classify({"label_names": ["bad", "good"], "seq_length": 16})
>>> model = task.build_model(encoder, kbc.BertPreprocessor(vocab, seq_length=16))
>>> task = task_of(model)  # e.g. of keras.saving.load_model("model.keras")
>>> [answer["label"] in ("bad", "good") for answer in
...  task.predict(model, task.from_lines(["a good film", "a bad film"]))]
[True, True]
"""

from keras_bert_core.tasks.classification import Classify, Pair
from keras_bert_core.tasks.embedding.fine_tuning import Embed
from keras_bert_core.tasks.multilabel.fine_tuning import MultiLabel
from keras_bert_core.tasks.multiple_choice import Choice
from keras_bert_core.tasks.question_answering.fine_tuning import Squad
from keras_bert_core.tasks.task import DEFAULT_SETTINGS, Task
from keras_bert_core.tasks.token_classification.fine_tuning import Ner

TASKS = {task.name: task for task in (Classify, Pair, MultiLabel, Squad, Ner, Choice, Embed)}

__all__ = ["DEFAULT_SETTINGS", "TASKS", "Choice", "Classify", "Embed", "MultiLabel", "Ner",
           "Pair", "Squad", "Task", "task_of"]


def task_of(model):
    """The `Task` a fine-tuned model answers, from its `task_settings`."""
    settings = getattr(model, "task_settings", None) or {}
    if settings.get("name") not in TASKS:
        raise ValueError(f"{type(model).__name__} {model.name!r} carries no fine-tuning task "
                         "settings (task_settings); build it with a task's build_model")
    return TASKS[settings["name"]](dict(settings))
