"""What an exported model answers: one serving task per kind of model.

A task names the raw-text inputs of the serving signature, turns them into encoder
features with the package's preprocessor, and turns the model's outputs into answers. The
SavedModel and TFLite writers share the tasks. New axes are made with `tf.expand_dims`,
not `[:, tf.newaxis]`: TFLite cannot convert a new axis of a tensor of dynamic shape.
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


class Classification(ServingTask):
    """Probabilities, label index and (given `label_names`) label name of a classifier.

    Args:
        label_names: optional class names, index = class id.
        pairs: see `ServingTask`.

    Example:
    >>> outputs = Classification(["no", "yes"]).outputs(tf.constant([[0.0, 2.0]]), None)
    >>> outputs["label"].numpy().tolist(), outputs["label_name"].numpy().tolist()
    ([1], [b'yes'])
    """

    def __init__(self, label_names=None, pairs=False):
        super().__init__(pairs)
        self.label_names = label_names

    def outputs(self, logits, features):
        label = tf.argmax(logits, axis=-1, output_type=tf.int32)
        outputs = {"logits": logits, "probabilities": tf.nn.softmax(logits), "label": label}
        if self.label_names is not None:
            outputs["label_name"] = tf.gather(tf.constant(self.label_names), label)
        return outputs


class Regression(ServingTask):
    """The score of a one-output `BertClassifier` (e.g. STS-B similarity).

    Example:
    >>> Regression().outputs(tf.constant([[0.5], [4.0]]), None)["score"].numpy().tolist()
    [0.5, 4.0]
    """

    def outputs(self, logits, features):
        return {"score": logits[:, 0]}


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
        return {"pooled_output": tf.cast(model_outputs["pooled_output"], tf.float32),
                "mean_embedding": mean}


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


class MultipleChoice(Classification):
    """`BertMultipleChoice`: inputs `text` [batch] and `choices` [batch, num_choices].

    Args:
        num_choices: candidates per example, as the model was built.

    Example:
    >>> task = MultipleChoice(num_choices=2)
    >>> task.text_inputs, task.text_specs()["choices"].shape
    (('text', 'choices'), TensorShape([None, 2]))
    """

    text_inputs = ("text", "choices")

    def __init__(self, num_choices):
        super().__init__(pairs=True)
        self.num_choices = num_choices

    def text_specs(self):
        return {"text": tf.TensorSpec([None], tf.string, name="text"),
                "choices": tf.TensorSpec([None, self.num_choices], tf.string, name="choices")}

    def ids_specs(self, seq_length=None):
        return {name: tf.TensorSpec([None, self.num_choices, seq_length], tf.int32, name=name)
                for name in INPUT_NAMES}

    def example_inputs(self, batch_size=1):
        choices = [f"Choice {i}: {EXAMPLE_TEXTS['choices']}".encode()
                   for i in range(self.num_choices)]
        return {"text": np.array([EXAMPLE_TEXTS["text"].encode()] * batch_size, dtype=object),
                "choices": np.array([choices] * batch_size, dtype=object)}

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        # One (text, choice) row per choice, example-major like `choices` itself.
        text = tf.reshape(tf.tile(tf.expand_dims(texts["text"], 1), [1, self.num_choices]), [-1])
        rows = preprocessor((text, tf.reshape(texts["choices"], [-1])),
                            static_shape=static_shape)
        return {name: tf.reshape(value, [-1, self.num_choices, tf.shape(value)[-1]])
                for name, value in rows.items()}, None


class SpanQuestionAnswering(ServingTask):
    """The best answer span of `BertSpanLabeler` within the context, and its text.

    The question is the first segment, the context the second. The best span maximizes
    `start_logit + end_logit` over context tokens with `start <= end < start +
    max_answer_length`. A row without context tokens answers index 0 (`[CLS]`) with the
    null score `start_logits[0] + end_logits[0]` and an empty answer.

    Args:
        max_answer_length: longest answer, in wordpieces.

    Example:
    >>> task = SpanQuestionAnswering(max_answer_length=2)
    >>> # [CLS] question [SEP] three context pieces [SEP]
    >>> features = {"segment_ids": tf.constant([[0, 0, 0, 1, 1, 1, 1]]),
    ...             "padding_mask": tf.ones([1, 7], tf.int32)}
    >>> logits = {"start_logits": tf.constant([[0.0, 0, 0, 1, 5, 0, 9]]),
    ...           "end_logits": tf.constant([[0.0, 0, 0, 0, 1, 6, 9]])}
    >>> outputs = task.outputs(logits, features)  # never the final [SEP], at most 2 pieces
    >>> outputs["start_index"].numpy().tolist(), outputs["end_index"].numpy().tolist()
    ([4], [5])
    """

    text_inputs = ("question", "context")

    def __init__(self, max_answer_length=30):
        super().__init__(pairs=True)
        if not isinstance(max_answer_length, int) or max_answer_length < 1:
            raise ValueError(f"max_answer_length must be a positive integer, "
                             f"got {max_answer_length!r}")
        self.max_answer_length = max_answer_length

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        if not with_offsets:
            return super().encode(preprocessor, texts, static_shape)
        tokenizer = preprocessor.tokenizer
        question = tokenizer(texts["question"])
        context, starts, ends = tokenizer.tokenize_with_offsets(texts["context"])
        features = preprocessor.packer((question, context), static_shape=static_shape)
        return features, (starts, ends)

    def outputs(self, model_outputs, features):
        start_logits = model_outputs["start_logits"]
        end_logits = model_outputs["end_logits"]
        # Context tokens: segment 1 but its closing [SEP] (the last real token).
        context = (features["segment_ids"] == 1) & (features["padding_mask"] > 0)
        context &= tf.concat([context[:, 1:], tf.zeros_like(context[:, :1])], axis=1)
        seq_length = tf.shape(start_logits)[1]
        position = tf.range(seq_length)
        span_length = tf.expand_dims(position, 0) - tf.expand_dims(position, 1)  # [start, end]
        allowed = (span_length >= 0) & (span_length < self.max_answer_length)
        allowed = (tf.expand_dims(allowed, 0) & tf.expand_dims(context, 2)
                   & tf.expand_dims(context, 1))
        scores = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)
        flat_shape = [tf.shape(scores)[0], -1]
        scores = tf.reshape(tf.where(allowed, scores, tf.float32.min), flat_shape)
        found = tf.reduce_any(tf.reshape(allowed, flat_shape), axis=-1)
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)
        return {
            "start_logits": start_logits,
            "end_logits": end_logits,
            "start_index": tf.where(found, best // seq_length, 0),
            "end_index": tf.where(found, best % seq_length, 0),
            "score": tf.where(found, tf.reduce_max(scores, axis=-1),
                              start_logits[:, 0] + end_logits[:, 0]),
        }

    def offset_outputs(self, outputs, features, offsets):
        starts, ends = offsets
        # Context piece k sits at `first + k`, right after the question's [SEP].
        first = tf.argmax(features["segment_ids"], axis=1, output_type=tf.int32)
        found = outputs["start_index"] > 0
        begin = tf.where(found, _offset_at(starts, outputs["start_index"] - first), 0)
        end = tf.where(found, _offset_at(ends, outputs["end_index"] - first), 0)
        return {"answer_start": begin, "answer_end": end}

    def text_outputs(self, outputs, features, texts, offsets):
        begin, end = outputs["answer_start"], outputs["answer_end"]
        return {"answer": tf.strings.substr(texts["context"], begin, end - begin)}


class TokenTagging(ServingTask):
    """Tags of `BertTokenClassifier`, per wordpiece and per word.

    A word is a wordpiece that does not start with `##` plus the `##` pieces after it; it
    takes the tag of its first piece (as the tagging data labels words).

    Args:
        vocabulary: the preprocessor's tokens (index = id).
        special_ids: ids of the tokens that belong to no word (`[CLS]`, `[SEP]`, `[PAD]`).
        label_names: optional tag names, index = tag id.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing", "now"]
    >>> task = TokenTagging(vocab, special_ids=(2, 3, 0), label_names=["O", "VERB"])
    >>> features = {"token_ids": tf.constant([[2, 5, 6, 7, 3, 0]]),  # [CLS] play ##ing now
    ...             "padding_mask": tf.constant([[1, 1, 1, 1, 1, 0]])}
    >>> outputs = task.outputs(tf.one_hot([[0, 1, 1, 0, 0, 0]], 2), features)
    >>> outputs["word_start"].numpy().tolist(), outputs["tag_names"].numpy()[0, 1:4].tolist()
    ([[0, 1, 0, 1, 0, 0]], [b'VERB', b'VERB', b'O'])
    """

    def __init__(self, vocabulary, special_ids, label_names=None):
        super().__init__(pairs=False)
        self.vocabulary = list(vocabulary)
        self.special_ids = tuple(special_ids)
        self.label_names = label_names

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        if not with_offsets:
            return super().encode(preprocessor, texts, static_shape)
        ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(texts["text"])
        return preprocessor.packer(ids, static_shape=static_shape), (starts, ends)

    def outputs(self, logits, features):
        tags = tf.argmax(logits, axis=-1, output_type=tf.int32)
        is_suffix = tf.constant([token.startswith("##") for token in self.vocabulary])
        word_start = self._in_word(features) & ~tf.gather(is_suffix, features["token_ids"])
        outputs = {"logits": logits, "tags": tags, "word_start": tf.cast(word_start, tf.int32)}
        if self.label_names is not None:
            outputs["tag_names"] = tf.gather(tf.constant(self.label_names), tags)
        return outputs

    def offset_outputs(self, outputs, features, offsets):
        starts, ends = offsets
        word_start = outputs["word_start"] > 0
        continues = self._in_word(features) & ~word_start
        word_end = self._in_word(features) & ~tf.concat(
            [continues[:, 1:], tf.zeros_like(continues[:, :1])], axis=1)
        # Piece k of the text sits at position k + 1, after [CLS].
        piece = tf.expand_dims(tf.range(tf.shape(word_start)[1]), 0) - 1
        word_tags = _left_align(outputs["tags"], word_start, -1)
        result = {"word_begin": _left_align(_offset_at(starts, piece), word_start, 0),
                  "word_end": _left_align(_offset_at(ends, piece), word_end, 0),
                  "word_tags": word_tags}
        if self.label_names is not None:
            # "" for no word: the last name (TFLite selects no strings, but gathers them).
            names = tf.constant([*self.label_names, ""])
            result["word_tag_names"] = tf.gather(
                names, tf.where(word_tags >= 0, word_tags, len(self.label_names)))
        return result

    def text_outputs(self, outputs, features, texts, offsets):
        begin, end = outputs["word_begin"], outputs["word_end"]
        text = tf.broadcast_to(tf.expand_dims(texts["text"], 1), tf.shape(begin))
        return {"tokens": tf.gather(tf.constant(self.vocabulary), features["token_ids"]),
                "words": tf.strings.substr(text, begin, end - begin)}

    def _in_word(self, features):
        token_ids = features["token_ids"]
        special = tf.reduce_any(
            tf.expand_dims(token_ids, 2) == tf.constant(self.special_ids), axis=-1)
        return (features["padding_mask"] > 0) & ~special


def serving_task(model, preprocessor, pairs=False, label_names=None, max_answer_length=30):
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

    Example:
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> pre = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"], 8)
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=6))
    >>> type(serving_task(encoder, pre, pairs=True)).__name__
    'Embedding'
    """
    _check_model_and_preprocessor(model, preprocessor)
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
        return SpanQuestionAnswering(max_answer_length)
    if isinstance(model, BertMultipleChoice):
        return MultipleChoice(model.num_choices)
    if isinstance(model, BertTokenClassifier):
        special_ids = (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id)
        return TokenTagging(preprocessor.vocabulary, special_ids, label_names)
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
        config = encoder.config
        if len(preprocessor.vocabulary) > config.vocab_size:
            raise ValueError(f"the preprocessor's vocabulary has {len(preprocessor.vocabulary)} "
                             f"tokens but the model's word embeddings have only "
                             f"{config.vocab_size} rows (config.vocab_size)")
        if preprocessor.seq_length > config.max_position_embeddings:
            raise ValueError(f"the preprocessor's seq_length {preprocessor.seq_length} exceeds "
                             f"the model's max_position_embeddings "
                             f"{config.max_position_embeddings}")


def _offset_at(offsets, piece_index):
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


def _left_align(values, keep, fill):
    """The `values` [batch, width] where `keep`, moved to the front of their row in order,
    `fill` after them (TFLite builtin ops)."""
    shape = tf.shape(values)
    slot = tf.cumsum(tf.cast(keep, tf.int32), axis=1, exclusive=True)
    slot = tf.where(keep, slot, shape[1])  # the others land in a column cut off below
    rows = tf.broadcast_to(tf.expand_dims(tf.range(shape[0]), 1), shape)
    scattered = tf.scatter_nd(tf.stack([rows, slot], axis=-1), values - fill,
                              shape + tf.constant([0, 1]))
    return scattered[:, :-1] + fill
