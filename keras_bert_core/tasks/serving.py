"""What an exported model answers: the serving adapters' base, and the graph helpers they
share.

A serving task names the raw-text inputs of the serving signature, turns them into encoder
features with the package's preprocessor, and turns the model's outputs into answers. Each
task defines its own (`classification.Classification`, `question_answering.
SpanQuestionAnswering`, `embedding.SentenceEmbedding`, ...); this module holds their base,
`RawOutputs` for other models, and the graph helpers they share; `serving_dispatch.
serving_task` picks one by the model's class. The SavedModel and TFLite writers use them
alike. New axes are made with `tf.expand_dims`, not `[:, tf.newaxis]`: TFLite cannot
convert a new axis of a tensor of dynamic shape.
"""

import numpy as np
import tensorflow as tf

from keras_bert_core.models.encoder import INPUT_NAMES

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

    Prompts (embedding models): `default_prompt` is put before every text of
    `serving_default`; `prompt_signatures` maps further text signatures (e.g. `query`,
    `document`) to the prompt each puts before the texts. The writers build those
    signatures as `serving_default`, with their prompt.

    `pooled` tasks (one answer per text, which padding columns do not change) are served
    without the padding columns the packer adds past every row's last token (it rounds the
    width up to a multiple of 8): the encoder computes no position that no answer reads.

    Args:
        pairs: the texts come in pairs, inputs `text_a` and `text_b`, packed into one row.

    Example:
    >>> ServingTask(pairs=True).text_inputs
    ('text_a', 'text_b')
    """

    default_prompt = ""
    prompt_signatures = {}
    # The features are a long text's windows `[batch, windows, seq]` (`kbc.
    # LongTextPreprocessor`), which the model (a windowed classifier) or `run_model` joins.
    windowed = False
    # One answer per text (a label, a vector) that no padding column changes: the writers
    # cut the columns past every row's last token before the encoder (`cut_padding`).
    pooled = False

    def __init__(self, pairs=False):
        self.pairs = pairs

    @property
    def text_inputs(self):
        """Names of the raw-text inputs, in the order the preprocessor packs them."""
        return ("text_a", "text_b") if self.pairs else ("text",)

    def text_specs(self):
        return {name: tf.TensorSpec([None], tf.string, name=name) for name in self.text_inputs}

    def ids_specs(self, seq_length=None):
        shape = [None, None, seq_length] if self.windowed else [None, seq_length]
        return {name: tf.TensorSpec(shape, tf.int32, name=name) for name in INPUT_NAMES}

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

    def run_model(self, model, features):
        """`(model outputs, features)`: what `outputs` reads, by default the model's
        outputs on `features` and `features` themselves."""
        return model(features, training=False), features

    def outputs(self, model_outputs, features):
        raise NotImplementedError

    def offset_outputs(self, outputs, features, offsets):
        return {}

    def text_outputs(self, outputs, features, texts, offsets):
        return {}


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


def cut_padding(features):
    """The encoder `features` without their last columns that are padding in every row.

    Example:
    >>> features = {"token_ids": tf.constant([[2, 5, 3, 0], [2, 3, 0, 0]]),
    ...             "padding_mask": tf.constant([[1, 1, 1, 0], [1, 1, 0, 0]])}
    >>> cut_padding(features)["token_ids"].numpy().tolist()
    [[2, 5, 3], [2, 3, 0]]
    """
    mask = features["padding_mask"]
    position = tf.range(1, tf.shape(mask)[-1] + 1)
    width = tf.reduce_max(tf.where(mask > 0, position, 0))
    width = tf.maximum(width, 0)  # an empty batch: its max is the lowest int32
    return {name: ids[..., :width] for name, ids in features.items()}
