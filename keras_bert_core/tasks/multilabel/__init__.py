"""Multi-label classification (`BertMultiLabelClassifier`): a text has any number of labels.

- `data`: `MultiLabelData` and `load_multilabel` (CSV/TSV with the labels joined by a
  delimiter, or JSON lines with a list), `multilabel_dataset` (`fit` batches, multi-hot);
- `thresholds`: `tune_thresholds`, each label's threshold maximizing its F1 on validation;
- `scores`: `multilabel_scores`, micro and macro F1 and each label's precision and recall;
- `answers`: label sets with their probabilities;
- `serving`: `MultiLabelClassification` serves the model from raw text, thresholds in
  the graph;
- `fine_tuning`: `MultiLabel`, the task `kbc finetune --task multilabel` runs.
"""

from keras_bert_core.tasks.multilabel.answers import answers, decide, sigmoid
from keras_bert_core.tasks.multilabel.data import (
    MultiLabelData,
    load_multilabel,
    multi_hot,
    multilabel_dataset,
)
from keras_bert_core.tasks.multilabel.scores import multilabel_scores
from keras_bert_core.tasks.multilabel.serving import MultiLabelClassification
from keras_bert_core.tasks.multilabel.thresholds import tune_thresholds

__all__ = [
    "MultiLabelClassification",
    "MultiLabelData",
    "answers",
    "decide",
    "load_multilabel",
    "multi_hot",
    "multilabel_dataset",
    "multilabel_scores",
    "sigmoid",
    "tune_thresholds",
]
