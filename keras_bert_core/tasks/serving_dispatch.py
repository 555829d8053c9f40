"""`serving_task`: the serving adapter of a model, chosen by its class.

Apart from the adapters' base (`serving`), which the task modules build on: this module
imports them.
"""

import keras

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.embedder import BertEmbedder
from keras_bert_core.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_core.models.multi_label_classifier import BertMultiLabelClassifier
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.tasks.classification import Classification, Regression
from keras_bert_core.tasks.embedding.serving import SentenceEmbedding, TextEmbedding
from keras_bert_core.tasks.multilabel import MultiLabelClassification
from keras_bert_core.tasks.multiple_choice import MultipleChoice
from keras_bert_core.tasks.question_answering import SpanQuestionAnswering
from keras_bert_core.tasks.serving import RawOutputs
from keras_bert_core.tasks.token_classification.serving import TokenTagging, WindowedTokenTagging
from keras_bert_core.text.long_text_preprocessor import LongTextPreprocessor


def serving_task(model, preprocessor, pairs=False, label_names=None, max_answer_length=30,
                 null_score_threshold=None):
    """The `ServingTask` for a model, chosen by its class.

    Args:
        model: a package task model (a `BertEmbedder`: `TextEmbedding`, its prompts
            included), a `BertEncoder`, or any Keras model that takes the encoder inputs
            (served by `RawOutputs`).
        preprocessor: the `BertPreprocessor` the model was trained with.
        pairs: for classifiers, encoders and other models: serve text pairs (`text_a`,
            `text_b`). Span labelers always read `question` and `context`, multiple
            choice `text` and `choices`.
        label_names: class names of a classifier (labels of a multi-label classifier,
            which answers by its own thresholds), or tag names of a token classifier.
        max_answer_length: longest answer of a span labeler, in wordpieces.
        null_score_threshold: a SQuAD 2.0 span labeler answers nothing when its null score
            beats the best span's by more than this; None: always the best span.

    Example:
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> pre = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"], 8)
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=6))
    >>> type(serving_task(encoder, pre, pairs=True)).__name__
    'SentenceEmbedding'
    """
    _check_model_and_preprocessor(model, preprocessor)
    if null_score_threshold is not None and not isinstance(model, BertSpanLabeler):
        raise ValueError(f"null_score_threshold is for span labelers (SQuAD 2.0); "
                         f"{type(model).__name__} has no spans to answer")
    num_classes = getattr(model, "num_classes", None)
    if label_names is not None:
        label_names = [str(name) for name in label_names]
        if num_classes is None or num_classes == 1:
            raise ValueError(f"label_names is for classifiers and token classifiers; "
                             f"{type(model).__name__} has no classes to name")
        if len(label_names) != num_classes:
            raise ValueError(f"label_names has {len(label_names)} names but the model has "
                             f"num_classes={num_classes}")
    if isinstance(preprocessor, LongTextPreprocessor):
        return _windowed_task(model, preprocessor, pairs, label_names)
    if isinstance(model, BertSpanLabeler):
        return SpanQuestionAnswering(preprocessor.packer, max_answer_length,
                                     null_score_threshold)
    if isinstance(model, BertMultipleChoice):
        return MultipleChoice(model.num_choices)
    if isinstance(model, BertTokenClassifier):
        special_ids = (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id)
        return TokenTagging(preprocessor.vocabulary, special_ids, label_names,
                            continues_word=preprocessor.tokenizer.continues_word)
    if isinstance(model, BertEmbedder):
        if pairs:
            raise ValueError("pairs is not for embedders: each text is embedded alone")
        return TextEmbedding(model.prompt(), model.prompts)
    if isinstance(model, BertMultiLabelClassifier):
        return MultiLabelClassification(model.decision_thresholds(), label_names, pairs)
    if isinstance(model, BertClassifier):
        return Regression(pairs) if num_classes == 1 else Classification(label_names, pairs)
    if isinstance(model, BertEncoder):
        return SentenceEmbedding(pairs)
    return RawOutputs(pairs)


def _windowed_task(model, preprocessor, pairs, label_names):
    """The serving task of a model that reads long texts as windows: a classifier (single
    or multi-label) that joins its windows' logits, or a tagger."""
    if pairs:
        raise ValueError("a LongTextPreprocessor reads one text per example, not pairs")
    if isinstance(model, BertTokenClassifier):
        special_ids = (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id)
        return WindowedTokenTagging(preprocessor.stride, preprocessor.vocabulary, special_ids,
                                    label_names, preprocessor.tokenizer.continues_word)
    if getattr(model, "window_aggregation", None) is None:
        raise ValueError(f"a LongTextPreprocessor's windows are for a BertClassifier with a "
                         f"window_aggregation or a BertTokenClassifier; {model.name!r} "
                         f"({type(model).__name__}) reads one row per text: serve it with a "
                         "BertPreprocessor")
    if isinstance(model, BertMultiLabelClassifier):
        task = MultiLabelClassification(model.decision_thresholds(), label_names)
    else:
        task = Regression() if model.num_classes == 1 else Classification(label_names)
    task.windowed = True
    return task


def _check_model_and_preprocessor(model, preprocessor):
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a Keras model, got {type(model).__name__}")
    try:
        inputs = model.input
    except (AttributeError, ValueError):  # a subclassed model not yet called
        inputs = None
    missing = [name for name in INPUT_NAMES if name not in inputs] if isinstance(
        inputs, dict) else []
    if missing:
        raise ValueError(f"model {model.name!r} must take the encoder inputs "
                         f"{list(INPUT_NAMES)}; it lacks {missing} (it takes {sorted(inputs)})")
    if not all(hasattr(preprocessor, name) for name in ("tokenizer", "packer", "vocabulary")):
        raise TypeError(f"preprocessor must be a keras_bert_core BertPreprocessor, got "
                        f"{type(preprocessor).__name__}")
    encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
    if isinstance(encoder, BertEncoder):
        encoder.config.check_fits(len(preprocessor.vocabulary), preprocessor.seq_length,
                                  vocabulary="the preprocessor's vocabulary",
                                  seq_length_name="the preprocessor's seq_length")
