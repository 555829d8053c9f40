"""DistilBERT's student: every other layer of the teacher, its weights copied."""

import dataclasses

from keras_bert_core.models.distillation.pairs import model_kind
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.models.pretrainer import BertPretrainer


def make_distilbert_student(teacher, teacher_layers=None):
    """A student of every other layer of the teacher's encoder, same width, with the
    teacher's weights: embeddings, the chosen layers, pooler and heads copied (DistilBERT's
    initialization; its authors took layers 0, 2, 4, 7, 9, 11 of BERT-base).

    Args:
        teacher: a task model, `BertEmbedder` or `BertPretrainer` (the student is the same
            kind, with the same settings), or a `BertEncoder` (the student is an encoder).
        teacher_layers: the teacher's layers to copy, in order; default every other one from
            the first, `range(0, num_layers, 2)`.

    Returns the student, built under the global dtype policy.

    Example:
    >>> import keras_bert_core as kbc
    >>> teacher = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "mini", vocab_size=100)), num_classes=3)
    >>> student = make_distilbert_student(teacher)
    >>> student.encoder.config.num_layers, student.num_classes
    (2, 3)
    """
    encoder = teacher if isinstance(teacher, BertEncoder) else teacher.encoder
    if not isinstance(teacher, (BertEncoder, BertEmbedder)):
        model_kind(teacher, "teacher")
    config = encoder.config
    if config.num_layer_groups is not None:
        raise ValueError("the teacher's layers share weights (ALBERT's num_layer_groups): "
                         "there are no separate layers to copy")
    layers = (list(range(0, config.num_layers, 2)) if teacher_layers is None
              else [int(index) for index in teacher_layers])
    if not layers or any(not 0 <= i < config.num_layers for i in layers):
        raise ValueError(f"teacher_layers must be indices of the teacher's "
                         f"{config.num_layers} layers, got {teacher_layers!r}")
    student_encoder = BertEncoder(dataclasses.replace(config, num_layers=len(layers)),
                                  one_hot_embeddings=encoder.one_hot_embeddings,
                                  remat=encoder.remat)
    student_encoder.embeddings.set_weights(encoder.embeddings.get_weights())
    for block, index in zip(student_encoder.blocks, layers, strict=True):
        block.set_weights(encoder.blocks[index].get_weights())
    for name in ("final_norm", "pooler"):
        if getattr(encoder, name) is not None:
            getattr(student_encoder, name).set_weights(getattr(encoder, name).get_weights())
    if teacher is encoder:
        return student_encoder
    settings = {k: v for k, v in teacher.get_config().items()
                if k not in ("encoder", "name", "trainable")}
    student = type(teacher)(student_encoder, **settings)
    if isinstance(teacher, BertPretrainer):
        student.set_head_weights(teacher.get_head_weights())
    elif isinstance(teacher, BertEmbedder):  # its dense layers read vectors of one width
        for dense, source in zip(student.denses, teacher.denses, strict=True):
            dense.set_weights(source.get_weights())
    else:
        student.head.set_weights(teacher.head.get_weights())
    return student
