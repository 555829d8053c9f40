"""What a teacher and its student must share: the kind of task model, its outputs, the
vocabulary."""

import keras

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier

# The kinds of model a distiller takes, and what must match between teacher and student.
KINDS = {BertClassifier: "num_classes", BertSpanLabeler: None,
         BertTokenClassifier: "num_classes", BertMultipleChoice: "num_choices",
         BertPretrainer: None}


def model_kind(model, role):
    """The class in `KINDS` that `model` (the `role`, for the error) is an instance of."""
    for kind in KINDS:
        if isinstance(model, kind):
            return kind
    names = ", ".join(kind.__name__ for kind in KINDS)
    raise TypeError(f"the {role} must be a keras_bert_core task model ({names}), got "
                    f"{type(model).__name__}")


def check_vocabularies(teacher_vocabulary, student_vocabulary):
    """Raises `ValueError` unless the two vocabularies are the same tokens in the same order
    (a student must read the teacher's token ids). Each is a list of tokens or anything
    with a `vocabulary` list (a `BertPreprocessor`).

    Example:
    >>> check_vocabularies(["[PAD]", "a"], ["[PAD]", "a"])
    >>> check_vocabularies(["[PAD]", "a"], ["[PAD]", "b", "c"])
    Traceback (most recent call last):
    ...
    ValueError: teacher and student vocabularies differ: the teacher's has 2 tokens, the \
student's 3 (first difference at id 1: 'a' vs 'b'); a student must use the teacher's vocabulary
    """
    teacher = list(getattr(teacher_vocabulary, "vocabulary", teacher_vocabulary))
    student = list(getattr(student_vocabulary, "vocabulary", student_vocabulary))
    if teacher == student:
        return
    index = next((i for i, (a, b) in enumerate(zip(teacher, student, strict=False))
                  if a != b),
                 min(len(teacher), len(student)))
    first = (f"first difference at id {index}: "
             f"{teacher[index] if index < len(teacher) else None!r} vs "
             f"{student[index] if index < len(student) else None!r}")
    raise ValueError(f"teacher and student vocabularies differ: the teacher's has "
                     f"{len(teacher)} tokens, the student's {len(student)} ({first}); a "
                     "student must use the teacher's vocabulary")


def check_pair(teacher, student):
    """The student's kind, after checking that the teacher (if any) is of that kind, with
    the same outputs and `vocab_size`."""
    kind = model_kind(student, "student")
    if teacher is None:
        return kind
    if model_kind(teacher, "teacher") is not kind:
        raise TypeError(f"teacher and student must be the same kind of model: the teacher is "
                        f"a {type(teacher).__name__}, the student a {kind.__name__}")
    attribute = KINDS[kind]
    if attribute and getattr(teacher, attribute) != getattr(student, attribute):
        raise ValueError(f"teacher and student differ in {attribute}: "
                         f"{getattr(teacher, attribute)} vs {getattr(student, attribute)}")
    sizes = teacher.encoder.config.vocab_size, student.encoder.config.vocab_size
    if sizes[0] != sizes[1]:
        raise ValueError(f"teacher and student vocabularies differ: the teacher has vocab_size "
                         f"{sizes[0]}, the student {sizes[1]}; a student must read the "
                         "teacher's token ids (build it with the teacher's vocabulary)")
    return kind


def from_pair_config(cls, config):
    """`cls` (a distiller) rebuilt from its `get_config`: the teacher (None when it was left
    out) and the student deserialized, the other settings passed on as they are."""
    config = dict(config)
    teacher = config.pop("teacher")
    return cls(None if teacher is None else keras.saving.deserialize_keras_object(teacher),
               keras.saving.deserialize_keras_object(config.pop("student")), **config)
