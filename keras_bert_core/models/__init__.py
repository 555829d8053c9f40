"""Functional Keras models built from `layers/`: the encoder and the task models."""

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.distillation import (
    Distiller,
    EmbeddingDistiller,
    check_vocabularies,
    distillation_kl,
    make_distilbert_student,
)
from keras_bert_core.models.electra_pretrainer import ElectraPretrainer, generator_config
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.models.embedding_losses import (
    ContrastiveLoss,
    CosineSimilarityLoss,
    MatryoshkaLoss,
    TripletLoss,
)
from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.models.lora import (
    LoraSummary,
    enable_lora,
    load_lora_weights,
    lora_summary,
    merge_lora,
    save_lora_weights,
)
from keras_bert_core.models.multi_label_classifier import BertMultiLabelClassifier
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.task import TaskModel
from keras_bert_core.models.token_classifier import BertTokenClassifier

__all__ = ["BertEncoder", "BertEmbedder", "BertClassifier", "BertMultiLabelClassifier",
           "BertMultipleChoice",
           "BertPretrainer", "ElectraPretrainer", "generator_config",
           "BertSpanLabeler", "BertTokenClassifier", "TaskModel", "Distiller",
           "EmbeddingDistiller", "check_vocabularies", "distillation_kl",
           "make_distilbert_student",
           "enable_lora", "save_lora_weights", "load_lora_weights", "merge_lora",
           "lora_summary", "LoraSummary", "ContrastiveLoss", "CosineSimilarityLoss",
           "TripletLoss", "MatryoshkaLoss"]
