"""What an exported model answers: the serving adapters' base and how one is chosen.

A serving task names the raw-text inputs of the serving signature, turns them into encoder
features with the package's preprocessor, and turns the model's outputs into answers. Each
task module defines its own (`classification.Classification`, `question_answering.
SpanQuestionAnswering`, ...); this module holds their base, the adapters of bare encoders and
other models, `serving_task`, which picks one by the model's class, and the graph helpers
they share. The SavedModel and TFLite writers use them alike. New axes are made with
`tf.expand_dims`, not `[:, tf.newaxis]`: TFLite cannot convert a new axis of a tensor of
dynamic shape.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier

# Sample texts per input name: warmup requests and request examples.
EXAMPLE_TEXTS = {
    "text": "The new phone's battery lasts two days, and the screen is great!",
    "text_a": "A man is playing a guitar on stage.",
    "text_b": "Someone performs music in front of an audience.",
    "question": "Who wrote the first computer program?",
    "context": "Ada Lovelace wrote the first computer program in 1843, for Babbage's engine.",
    "choices": "She fed the cat.",
}


class ServingTask:
    """How one kind of model is served from raw text.

    Subclasses define `outputs` (answers from the encoder features alone, as the ids
    signature gives them) and may define `offset_outputs` (answers located in the text by
    the wordpieces' byte offsets, computed with TFLite builtin ops) and `text_outputs`
    (answers that cut the text itself, SavedModel only: TFLite has no string slicing).

    Args:
        pairs: the texts come in pairs, inputs `text_a` and `text_b`, packed into one row.

    Example:
    >>> ServingTask(pairs=True).text_inputs
    ('text_a', 'text_b')
    """

    def __init__(self, pairs=False):
        self.pairs = pairs

    @property
    def text_inputs(self):
        """Names of the raw-text inputs, in the order the preprocessor packs them."""
        return ("text_a", "text_b") if self.pairs else ("text",)

    def text_specs(self):
        return {name: tf.TensorSpec([None], tf.string, name=name) for name in self.text_inputs}

    def ids_specs(self, seq_length=None):
        return {name: tf.TensorSpec([None, seq_length], tf.int32, name=name)
                for name in INPUT_NAMES}

    def example_inputs(self, batch_size=1):
        """Sample raw-text inputs: a dict of numpy string arrays, `batch_size` rows."""
        return {name: np.array([EXAMPLE_TEXTS[name].encode()] * batch_size, dtype=object)
                for name in self.text_inputs}

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        """Encoder features of `texts` (a dict keyed by `text_inputs`), and the wordpiece
        offsets `offset_outputs` and `text_outputs` need (None for tasks without such
        outputs, or if not `with_offsets`)."""
        segments = tuple(texts[name] for name in self.text_inputs)
        features = preprocessor(segments if len(segments) > 1 else segments[0],
                                static_shape=static_shape)
        return features, None

    def outputs(self, model_outputs, features):
        raise NotImplementedError

    def offset_outputs(self, outputs, features, offsets):
        return {}

    def text_outputs(self, outputs, features, texts, offsets):
        return {}


class Embedding(ServingTask):
    """A bare `BertEncoder`: the pooled `[CLS]` vector and the mean of the token vectors.

    Example:
    >>> encoded = {"sequence_output": tf.constant([[[1.0], [3.0], [9.0]]]),
    ...            "pooled_output": tf.constant([[0.5]])}
    >>> features = {"padding_mask": tf.constant([[1, 1, 0]])}
    >>> Embedding().outputs(encoded, features)["mean_embedding"].numpy().tolist()
    [[2.0]]
    """

    def outputs(self, model_outputs, features):
        sequence = tf.cast(model_outputs["sequence_output"], tf.float32)
        real = tf.expand_dims(tf.cast(features["padding_mask"] > 0, tf.float32), 2)
        # Every row holds [CLS] and [SEP], so the count is never 0.
        mean = tf.reduce_sum(sequence * real, axis=1) / tf.reduce_sum(real, axis=1)
        outputs = {"mean_embedding": mean}
        if "pooled_output" in model_outputs:  # DistilBERT has no pooler
            outputs["pooled_output"] = tf.cast(model_outputs["pooled_output"], tf.float32)
        return outputs


class RawOutputs(ServingTask):
    """Any other model on the encoder inputs: its outputs as they are.

    Example:
    >>> sorted(RawOutputs().outputs(tf.constant([[1.0, 2.0]]), None))
    ['outputs']
    """

    def outputs(self, model_outputs, features):
        if isinstance(model_outputs, dict):
            return dict(model_outputs)
        return {"outputs": model_outputs}


def serving_task(model, preprocessor, pairs=False, label_names=None, max_answer_length=30,
                 null_score_threshold=None):
    """The `ServingTask` for a model, chosen by its class.

    Args:
        model: a package task model, a `BertEncoder`, or any Keras model that takes the
            encoder inputs (served by `RawOutputs`).
        preprocessor: the `BertPreprocessor` the model was trained with.
        pairs: for classifiers, encoders and other models: serve text pairs (`text_a`,
            `text_b`). Span labelers always read `question` and `context`, multiple
            choice `text` and `choices`.
        label_names: class names of a classifier, or tag names of a token classifier.
        max_answer_length: longest answer of a span labeler, in wordpieces.
        null_score_threshold: a SQuAD 2.0 span labeler answers nothing when its null score
            beats the best span's by more than this; None: always the best span.

    Example:
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> pre = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"], 8)
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=6))
    >>> type(serving_task(encoder, pre, pairs=True)).__name__
    'Embedding'
    """
    # The task modules define their adapters on `ServingTask`, so they are imported here.
    from keras_bert_core.tasks.classification import Classification, Regression
    from keras_bert_core.tasks.multiple_choice import MultipleChoice
    from keras_bert_core.tasks.question_answering import SpanQuestionAnswering
    from keras_bert_core.tasks.token_classification import TokenTagging

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
    if isinstance(model, BertSpanLabeler):
        return SpanQuestionAnswering(preprocessor.packer, max_answer_length,
                                     null_score_threshold)
    if isinstance(model, BertMultipleChoice):
        return MultipleChoice(model.num_choices)
    if isinstance(model, BertTokenClassifier):
        special_ids = (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id)
        return TokenTagging(preprocessor.vocabulary, special_ids, label_names,
                            continues_word=preprocessor.tokenizer.continues_word)
    if isinstance(model, BertClassifier):
        return Regression(pairs) if num_classes == 1 else Classification(label_names, pairs)
    if isinstance(model, BertEncoder):
        return Embedding(pairs)
    return RawOutputs(pairs)


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


def offset_at(offsets, piece_index):
    """`offsets[b, piece_index[b, ...]]` as int32, 0 where the index is out of range; flat
    index arithmetic, which TFLite's builtin ops can do (a ragged-to-dense conversion
    cannot)."""
    splits = tf.cast(offsets.row_splits, tf.int32)
    per_row = [-1] + [1] * (piece_index.shape.rank - 1)
    row_start = tf.reshape(splits[:-1], per_row)
    row_length = tf.reshape(splits[1:], per_row) - row_start
    inside = (piece_index >= 0) & (piece_index < row_length)
    values = tf.pad(tf.cast(offsets.flat_values, tf.int32), [[0, 1]])  # never empty
    return tf.where(inside, tf.gather(values, row_start + tf.where(inside, piece_index, 0)), 0)


def left_align(values, keep, fill):
    """The `values` [batch, width] where `keep`, moved to the front of their row in order,
    `fill` after them (TFLite builtin ops)."""
    shape = tf.shape(values)
    slot = tf.cumsum(tf.cast(keep, tf.int32), axis=1, exclusive=True)
    slot = tf.where(keep, slot, shape[1])  # the others land in a column cut off below
    rows = tf.broadcast_to(tf.expand_dims(tf.range(shape[0]), 1), shape)
    scattered = tf.scatter_nd(tf.stack([rows, slot], axis=-1), values - fill,
                              shape + tf.constant([0, 1]))
    return scattered[:, :-1] + fill
