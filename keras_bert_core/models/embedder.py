"""`BertEmbedder`: a sentence embedding model (encoder, pooling, dense layers, L2 norm), the
sentence-transformers recipe as one Keras model that takes text."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_core.layers.fusion import real_tokens_only
from keras_bert_core.layers.pooling import SentencePooling
from keras_bert_core.models.embedding_losses import ContrastiveLoss
from keras_bert_core.models.encoder import INPUT_NAMES, encoder_inputs
from keras_bert_core.models.gradient_cache import cached_train_step
from keras_bert_core.models.task import TaskModel
from keras_bert_core.models.text_inputs import check_text_form, is_text_spec

# sentence-transformers' similarity functions (`similarity_fn_name`).
SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")
DENSE_ACTIVATIONS = ("tanh", "linear", "relu", "gelu", "sigmoid")
# `length_buckets="auto"`: this many lengths, evenly spaced up to the preprocessor's
# seq_length (multiples of 8): few enough shapes for XLA to compile each once.
AUTO_BUCKETS = 8


def auto_length_buckets(seq_length):
    """`length_buckets="auto"`'s lengths for `seq_length`: up to `AUTO_BUCKETS` multiples of
    8, evenly spaced, the last `seq_length`.

    >>> auto_length_buckets(128), auto_length_buckets(512), auto_length_buckets(20)
    ((16, 32, 48, 64, 80, 96, 112, 128), (64, 128, 192, 256, 320, 384, 448, 512), (8, 16, 20))
    """
    step = max(8, -(-seq_length // (8 * AUTO_BUCKETS)) * 8)
    return (*range(step, seq_length, step), seq_length)


def check_length_buckets(length_buckets):
    """`length_buckets` as `BertEmbedder` keeps it: "auto", None, or a sorted tuple of
    positive ints."""
    if length_buckets is None or length_buckets == "auto":
        return length_buckets
    if (isinstance(length_buckets, (str, int)) or not length_buckets
            or not all(isinstance(n, int) and n > 0 for n in length_buckets)):
        raise ValueError(f"length_buckets must be 'auto', None or a list of positive "
                         f"lengths; got {length_buckets!r}")
    return tuple(sorted(set(length_buckets)))


def dense_settings(layer):
    """One dense layer's settings as `BertEmbedder` keeps them: `{"units", "activation",
    "use_bias"}`, from such a dict (defaults filled in) or an int (the units)."""
    if isinstance(layer, int):
        layer = {"units": layer}
    if not isinstance(layer, dict) or not isinstance(layer.get("units"), int):
        raise ValueError(f"a dense layer is an int (its units) or a dict with int 'units', "
                         f"'activation' and 'use_bias'; got {layer!r}")
    settings = {"units": layer["units"], "activation": layer.get("activation", "tanh"),
                "use_bias": bool(layer.get("use_bias", True))}
    unknown = sorted(set(layer) - set(settings))
    if unknown or settings["activation"] not in DENSE_ACTIVATIONS:
        raise ValueError(f"dense layer {layer!r}: activation must be one of "
                         f"{DENSE_ACTIVATIONS}; keys are units, activation, use_bias")
    return settings


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertEmbedder(TaskModel):
    """Embeds texts as vectors: encoder, pooling, optional dense layers, optional L2 norm.

    The sentence-transformers recipe, for every family the encoder builds (BERT, RoBERTa,
    ALBERT, DistilBERT): the encoder's token vectors are pooled (`SentencePooling`: mean,
    cls, max, mean_sqrt_len, last_token, padding left out), passed through the dense
    layers (as sentence-transformers' `Dense` modules: a linear map and an activation,
    tanh by default) and, with `normalize`, scaled to unit length. Everything after the
    encoder runs in float32.

    With a preprocessor (`kbc.BertPreprocessor`) it takes text: `predict(["a text", ...])`
    returns float32 vectors `[n, dim]`, each batch padded to its longest text.

    Prompts: `prompts` maps names to strings put before a text (e.g. `{"query": "query: ",
    "document": "passage: "}`), as sentence-transformers' `prompts`. `predict(texts,
    prompt_name="query")` embeds `"query: " + text`; without `prompt_name`,
    `default_prompt_name`'s prompt (if any) is used, and `prompt="..."` gives a prompt
    string itself (`prompt=""`: none). `fit` and `evaluate` read the texts as given.

    Training: `fit(x)` where `x` is a tuple of C columns of texts (anchor, positive[,
    negatives...]) or a batched `tf.data.Dataset` of such tuples (or of `(columns, y)`):
    each column is embedded alone, and the loss sees `y_pred` float32 `[batch, C, dim]`
    (its `y_true` is the data's `y`, zeros where there is none). The default loss is
    `ContrastiveLoss` (in-batch negatives), the optimizer `BertAdamW(5e-5)`, no metrics.

    Large batches on small memory: `compile(mini_batch_size=n)` trains with gradient
    caching (GradCache): the loss and gradients of the whole batch, in the memory of `n`
    examples (see `compile`).

    Length buckets: short queries need not pay for long documents' padding. `fit` and
    `evaluate` pad each column of a batch on its own, to the smallest of `length_buckets`
    that holds its longest text (with `"auto"`, up to 8 multiples of 8 up to the
    preprocessor's `seq_length`: 16, 32, ..., 128 for 128), and the encoder runs on each
    column at its length; so a run sees a few static shapes (XLA compiles each once), and
    the loss and gradients are those of columns padded to `seq_length` (padding is masked
    out). `length_buckets=None` pads every column to `seq_length` (one shape, `[batch, C,
    seq_length]`), as does a model under `TPUStrategy`. `predict` on a tuple of columns pads
    each to its own longest text.

    Args:
        encoder: a `BertEncoder`.
        pooling: a pooling mode, or a list of modes whose vectors are concatenated.
        dense_layers: a list of dense layers, each an int (its units, tanh) or a dict
            `{"units": int, "activation": "tanh"|"linear"|"relu"|"gelu"|"sigmoid",
            "use_bias": bool}`.
        normalize: scale each vector to unit L2 norm (last).
        prompts: None or a dict of prompt name -> prompt string.
        default_prompt_name: the prompt `predict` uses when given none; None: no prompt.
        similarity: how vectors are compared (`similarity`): `"cosine"`, `"dot"`,
            `"euclidean"` or `"manhattan"` (sentence-transformers' `similarity_fn_name`).
        length_buckets: the lengths training pads each column to (see above): `"auto"`,
            a list of lengths (cut at, and completed by, the preprocessor's `seq_length`),
            or None: every column to `seq_length`.
        preprocessor: None, or the layer that turns text into the inputs (see `TaskModel`).
        **kwargs: `name`, `trainable`, `task_settings`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]`, or
    `[batch, columns, seq]` for several texts per example, or a tuple of `[batch, seq]`
    tensors per name (one per column, each of its own length); with a preprocessor also
    texts.

    Outputs: float32 `[batch, dim]` (`[batch, columns, dim]`).

    Example:
    >>> import keras_bert_core as kbc
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "car"]
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab)))
    >>> embedder = kbc.BertEmbedder(encoder, pooling="mean", dense_layers=[32],
    ...                             prompts={"query": "a "},
    ...                             preprocessor=kbc.BertPreprocessor(vocab, seq_length=16))
    >>> vectors = embedder.predict(["a red car", "a blue car"], verbose=0)
    >>> vectors.shape, vectors.dtype, round(float((vectors[0] ** 2).sum()), 4)
    ((2, 32), dtype('float32'), 1.0)
    >>> embedder.predict(["red car"], prompt_name="query", verbose=0).shape
    (1, 32)
    >>> embedder.similarity(vectors, vectors).shape
    (2, 2)

    Training on (anchor, positive) columns: `embedder.fit((anchors, positives))`.
    """

    # The pooled [CLS] output is not read: its weights get no gradient.
    trains_pooler = False

    def __init__(self, encoder, pooling="mean", dense_layers=None, normalize=True,
                 prompts=None, default_prompt_name=None, similarity="cosine",
                 length_buckets="auto", **kwargs):
        self._check_encoder(encoder)
        dense_layers = [dense_settings(layer) for layer in dense_layers or ()]
        prompts = dict(prompts or {})
        if not all(isinstance(value, str) for value in prompts.values()):
            raise ValueError(f"prompts must map names to strings, got {prompts!r}")
        if default_prompt_name is not None and default_prompt_name not in prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not one of the "
                             f"prompts {sorted(prompts)}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        inputs = encoder_inputs()
        pooler = SentencePooling(pooling, name="pooling")
        vectors = pooler(encoder(inputs)["sequence_output"], inputs["padding_mask"])
        denses = [keras.layers.Dense(layer["units"], activation=layer["activation"],
                                     use_bias=layer["use_bias"], dtype="float32",
                                     name=f"dense_{index}")
                  for index, layer in enumerate(dense_layers)]
        for dense in denses:
            vectors = dense(vectors)
        if normalize:
            vectors = keras.layers.UnitNormalization(dtype="float32", name="normalize")(vectors)
        super().__init__(encoder, inputs, vectors, **kwargs)
        self.embedding_dim = int(vectors.shape[-1])
        # `call` also takes [batch, columns, seq]: no input spec fixes the rank.
        self.input_spec = None
        self.pooling = pooler.modes if len(pooler.modes) > 1 else pooler.modes[0]
        self.pooler = pooler
        self.dense_layers = dense_layers
        self.denses = denses
        self.normalize = bool(normalize)
        self.prompts = prompts
        self.default_prompt_name = default_prompt_name
        self.similarity_name = similarity
        self.length_buckets = check_length_buckets(length_buckets)
        self.compile()

    def call(self, inputs, training=None, mask=None):
        # The pooling reads the real tokens alone: the blocks' feed-forward skips the padding
        # at inference too (bench/embedding_speed.py, short texts).
        with real_tokens_only():
            return self._embed(inputs, training, mask)

    def _embed(self, inputs, training, mask):
        if isinstance(inputs["token_ids"], (tuple, list)):  # columns of their own lengths
            vectors = [super(BertEmbedder, self).call(
                {name: inputs[name][index] for name in INPUT_NAMES}, training=training,
                mask=mask) for index in range(len(inputs["token_ids"]))]
            return ops.stack(vectors, axis=1)
        if len(inputs["token_ids"].shape) != 3:
            return super().call(inputs, training=training, mask=mask)
        # [batch, columns, seq]: every text is a row of one encoder batch.
        shape = ops.shape(inputs["token_ids"])
        rows = {name: ops.reshape(inputs[name], (-1, shape[2])) for name in INPUT_NAMES}
        vectors = super().call(rows, training=training, mask=mask)
        return ops.reshape(vectors, (shape[0], shape[1], self.embedding_dim))

    def preprocess_text(self, text, static_shape=None):
        """The inputs for a batch of texts `[batch, seq]`, or for a tuple of C columns of
        texts: with `static_shape` True (`fit`, `evaluate`) a tuple of C `[batch, seq]`
        tensors per input name, each column padded to its length bucket (`length_buckets`;
        None: `[batch, C, seq_length]`, every column packed alone, padded alike); False
        (`predict`): each column padded to its longest text."""
        if not isinstance(text, tuple):
            return super().preprocess_text(text, static_shape)
        self._check_text(text)
        buckets = self._column_lengths() if static_shape else ()
        if buckets is not None and static_shape is not None:
            packed = [self._pad_to_bucket(super(BertEmbedder, self).preprocess_text(
                column, static_shape=False), buckets) for column in text]
            return {name: tuple(column[name] for column in packed) for name in INPUT_NAMES}
        columns = [tf.convert_to_tensor(column, tf.string) for column in text]
        rows = super().preprocess_text(tf.concat(columns, 0), static_shape)
        # Column-major rows [C * batch, seq] -> [batch, C, seq].
        return {name: tf.transpose(tf.reshape(value, [len(columns), -1,
                                                      value.shape[-1] or tf.shape(value)[-1]]),
                                   [1, 0, 2])
                for name, value in rows.items()}

    def _column_lengths(self):
        """The lengths a training column is padded to (the preprocessor's seq_length last),
        or None: every column to seq_length (no buckets, or a preprocessor that only pads
        to its seq_length, or TPU, which needs one shape)."""
        seq_length = getattr(self.preprocessor, "seq_length", None)
        if (self.length_buckets is None or not self._preprocessor_takes_static_shape
                or not isinstance(seq_length, int)
                or isinstance(self.distribute_strategy, tf.distribute.TPUStrategy)):
            return None
        if self.length_buckets == "auto":
            return auto_length_buckets(seq_length)
        return (*(n for n in self.length_buckets if n < seq_length), seq_length)

    def _pad_to_bucket(self, features, buckets):
        """`features` padded to the smallest of `buckets` that holds their length (the
        preprocessor's pad id in `token_ids`, zeros elsewhere)."""
        if not buckets:
            return features
        length = tf.shape(features["token_ids"])[1]
        bucket = tf.gather(buckets, tf.searchsorted(tf.constant(buckets), length[None]))[0]
        pad_id = getattr(self.preprocessor, "pad_id", 0)
        return {name: tf.pad(value, [[0, 0], [0, bucket - length]],
                             constant_values=pad_id if name == "token_ids" else 0)
                for name, value in features.items()}

    def _check_text(self, text):
        for column in text if isinstance(text, tuple) else (text,):
            check_text_form(self, column)

    def prompt(self, prompt_name=None, prompt=None):
        """The prompt string `predict` puts before each text (see the class docstring)."""
        if prompt is not None:
            return prompt
        name = self.default_prompt_name if prompt_name is None else prompt_name
        if name is None:
            return ""
        if name not in self.prompts:
            raise ValueError(f"{type(self).__name__} {self.name!r} has no prompt "
                             f"{name!r}; its prompts are {sorted(self.prompts)}")
        return self.prompts[name]

    def predict(self, x, *args, prompt_name=None, prompt=None, **kwargs):
        """`keras.Model.predict`; texts get the prompt `prompt_name` (or `prompt`) first."""
        prefix = self.prompt(prompt_name, prompt)
        if prefix:
            x = _with_prompt(x, prefix)
        return super().predict(x, *args, **kwargs)

    def similarity(self, a, b):
        """The `[len(a), len(b)]` similarities of two sets of vectors, by `similarity`
        (the distances negated, so that higher is always closer)."""
        a, b = (np.asarray(v, "float32") for v in (a, b))
        if self.similarity_name == "cosine":
            a, b = (v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
                    for v in (a, b))
        if self.similarity_name in ("cosine", "dot"):
            return a @ b.T
        order = 2 if self.similarity_name == "euclidean" else 1
        return -np.linalg.norm(a[:, None, :] - b[None, :, :], ord=order, axis=-1)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if y is None:  # in-batch-negative losses read no targets
            y = ops.zeros(ops.shape(y_pred)[:1], "float32")
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def default_compile_args(self):
        return {"loss": ContrastiveLoss(), "metrics": []}

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", mini_batch_size=None,
                **kwargs):
        """`TaskModel.compile`, and `mini_batch_size`: None, or train with gradient caching
        (GradCache; sentence-transformers' `CachedMultipleNegativesRankingLoss` and its
        `mini_batch_size`): `fit` embeds each batch this many examples at a time, computes
        the loss over the whole batch's vectors (every example's in-batch negatives are the
        whole batch's), then embeds each mini-batch again and backpropagates its share
        (`models.gradient_cache`). Memory holds one mini-batch's activations, so a batch of
        thousands trains where a few dozen fit, for a second forward pass; the loss and
        gradients are the whole batch's. Runs without XLA (`jit_compile` is set False).
        """
        if mini_batch_size is not None and (not isinstance(mini_batch_size, int)
                                            or isinstance(mini_batch_size, bool)
                                            or mini_batch_size < 1):
            raise ValueError(f"mini_batch_size must be None or a positive int; "
                             f"got {mini_batch_size!r}")
        super().compile(optimizer, loss, metrics=metrics, **kwargs)
        self.mini_batch_size = mini_batch_size
        if mini_batch_size is not None:
            self._compile_args.args["mini_batch_size"] = mini_batch_size
            # Its loops run over mini-batches of the batch's own (last: smaller) sizes.
            self.jit_compile = self.jit_compile_per_replica = False

    def train_step(self, data):
        if self.mini_batch_size is None:
            return super().train_step(data)
        return cached_train_step(self, data, self.mini_batch_size)

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling,
                "dense_layers": self.dense_layers, "normalize": self.normalize,
                "prompts": self.prompts, "default_prompt_name": self.default_prompt_name,
                "similarity": self.similarity_name,
                "length_buckets": (list(self.length_buckets)
                                   if isinstance(self.length_buckets, tuple)
                                   else self.length_buckets)}


def _with_prompt(x, prefix):
    """Texts `x` (a batch, a tuple of columns, or a dataset of them) with `prefix` before
    each text."""
    def join(texts):
        return tf.strings.join([prefix, tf.convert_to_tensor(texts, tf.string)])

    if isinstance(x, tf.data.Dataset):
        if is_text_spec(x.element_spec):
            return x.map(lambda *text: tf.nest.map_structure(join, text if len(text) > 1
                                                             else text[0]))
        return x.map(lambda text, *rest: (tf.nest.map_structure(join, text), *rest))
    if isinstance(x, dict):  # token ids: the prompt cannot be added
        raise ValueError("a prompt applies to texts; predict got a dict of token ids")
    return tf.nest.map_structure(join, x) if isinstance(x, tuple) else join(x)
