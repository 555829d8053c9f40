"""Fine-tuning tasks, one module (or one folder, for a task with its own data format) each:
its data, features, metrics, answers, serving, and the task as `kbc finetune` runs it (a
`task.Task`: `Classify`/`Pair`, `MultiLabel`, `Squad`, `Ner`, `Choice`; `fine_tuning.TASKS`
names them and `fine_tuning.task_of(model)` is the task a fine-tuned model answers).

- `classification`: `BertClassifier` on single texts or pairs (regression too); CSV, TSV,
  JSONL or GLUE; answers: label name and probabilities, or score; served as `Classification`
  or `Regression`.
- `multilabel/`: `BertMultiLabelClassifier`; CSV, TSV (labels joined by a delimiter) or
  JSONL (a list); thresholds tuned on validation data (`tune_thresholds`), micro and macro
  F1 (`multilabel_scores`); answers: the label set and every label's probability; served
  as `MultiLabelClassification`, thresholds in the graph.
- `question_answering/`: `BertSpanLabeler`; SQuAD JSON (`squad`: examples; `scores`: official
  scores); answers: answer text and its character offsets; served as `SpanQuestionAnswering`.
- `token_classification/`: `BertTokenClassifier`; CoNLL (`conll`: files; `scores`: entity
  scores); answers: words with their tags; served as `TokenTagging`.
- `multiple_choice`: `BertMultipleChoice`; JSONL; answers: chosen index, its text and the
  probabilities; served as `MultipleChoice`.
- `embedding/`: sentence vectors; pairs files (`load_pairs`), retrieval sets in BEIR's
  layout (`load_retrieval`), retrieval and similarity metrics; a bare encoder served as
  `SentenceEmbedding`.

`records` reads the CSV, TSV and JSON-lines files, `tfds` the benchmarks of TensorFlow
Datasets (GLUE, SQuAD, CoNLL-2003); `serving` holds the serving adapters' base,
`embedding.serving` serves a bare encoder, and `serving_dispatch.serving_task` chooses the
adapter of a model for the SavedModel and TFLite exports. Each task's `answers` turns its
model's outputs into JSON-ready answers; `kbc predict` prints them.

Example: a classifier's and a span labeler's outputs as answers (untrained tiny models here;
a `kbc finetune` run's `model.keras` loads with `keras.saving.load_model`).
>>> import keras_bert_core as kbc
>>> from keras_bert_core.tasks import classification, question_answering
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "wrote", "it", "who", "?"]
>>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
>>> classifier = kbc.BertClassifier(encoder, num_classes=2)
>>> preprocessor = kbc.BertPreprocessor(vocab, seq_length=16)
>>> logits = classifier.predict(preprocessor(["Ada wrote it."]), verbose=0)
>>> (answer,) = classification.answers(logits, ["negative", "positive"])
>>> answer["label"] in ("negative", "positive"), sorted(answer["probabilities"])
(True, ['negative', 'positive'])
>>> examples = [kbc.tasks.SquadExample("q1", "Who wrote it?", "Ada wrote it.")]
>>> features = question_answering.squad_features(examples, preprocessor.tokenizer,
...                                              max_seq_length=16, max_query_length=8)
>>> outputs = kbc.BertSpanLabeler(encoder).predict(features.inputs, verbose=0)
>>> (answer,) = question_answering.answers(examples, features, outputs["start_logits"],
...                                        outputs["end_logits"])
>>> answer["answer"] == "Ada wrote it."[answer["answer_start"]:answer["answer_end"]] != ""
True
"""

from keras_bert_core.tasks import (
    classification,
    embedding,
    multilabel,
    multiple_choice,
    question_answering,
    records,
    serving,
    serving_dispatch,
    tfds,
    token_classification,
)
from keras_bert_core.tasks.classification import (
    TextClassificationData,
    classification_dataset,
    load_text_classification,
)
from keras_bert_core.tasks.multilabel import MultiLabelData, load_multilabel
from keras_bert_core.tasks.multiple_choice import (
    MultipleChoiceData,
    load_multiple_choice,
    multiple_choice_dataset,
)
from keras_bert_core.tasks.question_answering import (
    SquadExample,
    SquadFeatures,
    extract_answers,
    load_squad,
    squad_features,
    squad_metrics,
)
from keras_bert_core.tasks.records import read_records
from keras_bert_core.tasks.serving import ServingTask
from keras_bert_core.tasks.serving_dispatch import serving_task
from keras_bert_core.tasks.tfds import TFDS_TASKS, load_tfds_task
from keras_bert_core.tasks.token_classification import (
    TaggingData,
    TaggingFeatures,
    entity_scores,
    load_conll,
    predictions_to_tags,
    tagging_features,
)

__all__ = [
    "MultiLabelData",
    "MultipleChoiceData",
    "ServingTask",
    "SquadExample",
    "SquadFeatures",
    "TFDS_TASKS",
    "TaggingData",
    "TaggingFeatures",
    "TextClassificationData",
    "classification",
    "classification_dataset",
    "embedding",
    "entity_scores",
    "extract_answers",
    "load_conll",
    "load_multilabel",
    "load_multiple_choice",
    "load_squad",
    "load_text_classification",
    "load_tfds_task",
    "multilabel",
    "multiple_choice",
    "multiple_choice_dataset",
    "predictions_to_tags",
    "question_answering",
    "read_records",
    "records",
    "serving",
    "serving_dispatch",
    "serving_task",
    "squad_features",
    "squad_metrics",
    "tagging_features",
    "tfds",
    "token_classification",
]
