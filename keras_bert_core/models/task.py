"""`TaskModel`: what every task model shares: the encoder, default training settings, config,
and an optional preprocessor that lets `fit`, `evaluate` and `predict` take raw text."""

import warnings

import keras
import tensorflow as tf

from keras_bert_core.keras_internals import loss_tracker
from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.models.text_inputs import (
    arguments_by_name,
    as_arrays,
    check_preprocessor,
    check_targets,
    check_text_form,
    eagerly_preprocessed,
    is_text_data,
    is_text_spec,
    read_with_one_iterator,
    split_last,
    takes_argument,
)
from keras_bert_core.optimizers import BertAdamW, BuildsOptimizerFirst


class _CompileArgs:
    """`compile`'s arguments as given ("auto" included), serialized only when the model is
    saved, so a loaded model recompiles with the same defaults (weight-decay exclusions too)."""

    def __init__(self, **args):
        self.args = args

    def serialize(self):
        return keras.saving.serialize_keras_object(self.args)


class TaskModel(BuildsOptimizerFirst, keras.Model):
    """Base of the task models: a `BertEncoder`, heads, and working `compile` defaults.

    A task model is compiled on construction, so `fit` works at once; `compile()` with no
    arguments restores the defaults, and any argument given replaces its default only.
    The model takes the encoder's dtype policy (under `"mixed_float16"` `compile` wraps the
    optimizer in a `LossScaleOptimizer`).

    XLA under `tf.distribute`: Keras compiles its whole train step, `strategy.run` over every
    replica included, as one XLA cluster, which XLA cannot place across devices
    (keras-team/keras#19005). With `compile(jit_compile=True)` under a strategy of two or
    more replicas (mirrored, multi-worker; not TPU, which compiles by itself), a task model
    instead compiles each replica's forward and backward pass on its own device and applies
    the gradients, all-reduce included, outside XLA: `model.jit_compile` is then `False`
    (Keras's whole-step XLA is off) and `model.jit_compile_per_replica` is `True`. A loss
    that gathers from every replica (`synchronizes_replicas`: `ContrastiveLoss`'s
    global-batch negatives) cannot run inside one replica's XLA step: such a model trains
    without XLA under the strategy, with a warning.

    Raw text: a task model may carry a `preprocessor`, any Keras layer (or callable) that
    maps a batch of strings, or a tuple `(first, second)` of batches for pairs, to the dict
    of int32 `token_ids`, `segment_ids`, `padding_mask` (e.g. `kbc.BertPreprocessor`).
    `fit`, `evaluate` and `predict` then also take text: a string, a list or array of
    strings, a tuple of two such for pairs (a tuple is always read as segments; a list is a
    batch), or a batched `tf.data.Dataset` of them (elements `text` or `(text, y[,
    sample_weight])`). A model a `kbc` task built (`task_settings["name"]`) reads its
    task's form only: a classify or ner model refuses a tuple of two (pairs; pass a list),
    a pair or squad model anything but; `None`, an empty batch and a `None` among texts
    are refused too, each in one clear error. `fit` and `evaluate` preprocess text inside
    the `tf.data` input pipeline, so under `tf.distribute` the replicas receive int32 ids,
    never strings, and pad every batch to the preprocessor's `seq_length` (static shapes,
    aligned with per-token labels). `predict` preprocesses batch by batch (eagerly: nothing
    to trace) and pads each batch to its longest text (a preprocessor that takes
    `static_shape`), except for models whose outputs are per token (`outputs_per_token`:
    span and token models), whose outputs are `[n, seq_length]` so that every batch's
    positions line up. Dict inputs pass through unchanged. The preprocessor is saved with
    the model (`model.save`): `BertPreprocessor` keeps its vocabulary files as assets of
    the `.keras` file (`assets/preprocessor/tokenizer/vocab.txt`, see
    `keras_bert_core.text.vocabulary.assets`), not in its config.

    Answers: `task_settings` is a JSON-ready dict of what turns the model's outputs into
    answers and how its data is read, saved in the model's config, so that a `.keras` file
    (with its preprocessor) is the whole model. `kbc finetune` writes the task's settings:
    `name` (the `kbc` task), `seq_length`, `lower_case`, the data columns (`text_column`,
    `pair_column`, `label_column`, `question_column`, `choices_column`, `context_column`)
    and, by task, `label_names` (classify, pair, ner; None for regression), `doc_stride`,
    `max_query_length`, `max_answer_length`, `null_score_threshold`, `version_2` (squad),
    `num_choices` (choice). `keras_bert_core.tasks.fine_tuning.task_of(model)` reads them to answer.

    Subclasses build their functional graph, call `super().__init__(encoder, inputs, outputs,
    **kwargs)`, set their attributes, call `self.compile()`, define `default_compile_args`.

    Args:
        encoder: the `BertEncoder` inside the graph.
        inputs: the functional model's inputs.
        outputs: the functional model's outputs.
        preprocessor: None, or the layer that turns text into the model's inputs (see
            above); also the attribute `preprocessor`, which may be set later.
        task_settings: None, or the dict of settings its answers need (see above); also
            the attribute `task_settings`.
        **kwargs: `name`, `trainable`.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.models.BertClassifier(encoder, num_classes=2)
    >>> type(model.optimizer).__name__, model.default_learning_rate
    ('BertAdamW', 5e-05)
    >>> model.compile(optimizer="sgd")  # the task's loss and metrics stay
    >>> type(model.optimizer).__name__, type(model.loss).__name__
    ('SGD', 'SparseCategoricalCrossentropy')

    With a preprocessor, text goes in:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film"]
    >>> preprocessor = kbc.BertPreprocessor(vocab, seq_length=16)
    >>> model = kbc.BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)
    >>> history = model.fit(["a good film", "a bad film"], [1, 0], epochs=2, verbose=0)
    >>> model.predict(["a good film"], verbose=0).shape
    (1, 2)
    >>> model.predict((["a film"], ["a good film"]), verbose=0).shape  # pairs
    (1, 2)
    >>> model.preprocess_text(["a film"])["token_ids"].numpy().tolist()
    [[2, 5, 8, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]

    The preprocessor and the settings travel in the `.keras` file:
    >>> import os, tempfile, keras
    >>> model.task_settings = {"label_names": ["bad", "good"]}
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> model.save(path)
    >>> restored = keras.saving.load_model(path)
    >>> restored.task_settings, restored.predict(["a good film"], verbose=0).shape
    ({'label_names': ['bad', 'good']}, (1, 2))
    """

    default_learning_rate = 5e-5
    # Span and token models read only the sequence output: their loss has no gradient for
    # the pooler, so they leave it out of the weights they train.
    trains_pooler = True
    # Whether the outputs have a position per token (span and token models): `predict`
    # on text then pads every batch alike, so that the batches' outputs concatenate.
    outputs_per_token = False

    def __init__(self, encoder, inputs, outputs, preprocessor=None, task_settings=None, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = encoder.dtype_policy  # functional models drop a `dtype` argument
        self.encoder = encoder
        self.preprocessor = preprocessor
        self.task_settings = task_settings

    @property
    def preprocessor(self):
        """The layer that turns text into the model's inputs, or None."""
        return self._preprocessor

    @preprocessor.setter
    def preprocessor(self, preprocessor):
        if isinstance(preprocessor, dict):  # serialized, as `get_config` writes it
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        check_preprocessor(self.encoder, preprocessor)
        self._preprocessor = preprocessor  # what it takes is read once: `predict` reads often
        self._preprocessor_takes_static_shape = takes_argument(preprocessor, "static_shape")

    def preprocess_text(self, text, static_shape=None):
        """The model's inputs for a batch of text, by the preprocessor.

        Args:
            text: a batch of strings, or a tuple `(first, second)` of batches for pairs
                (`BertMultipleChoice`: `(contexts, choices)`); tensors or Python lists.
            static_shape: passed on to a preprocessor that takes it (True: pad to its
                `seq_length`; False: to the batch's longest text); None: its own default.

        Returns:
            the preprocessor's dict of int32 inputs.
        """
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} {self.name!r} was given text but has no "
                             "preprocessor: pass preprocessor=kbc.BertPreprocessor(vocabulary, "
                             "seq_length=...) to the model (or set model.preprocessor), or give "
                             "it the dict of token_ids, segment_ids, padding_mask")
        check_text_form(self, text)
        if static_shape is not None and self._preprocessor_takes_static_shape:
            return self.preprocessor(text, static_shape=static_shape)
        return self.preprocessor(text)

    def fit(self, *args, **kwargs):
        arguments = arguments_by_name(keras.Model.fit, self, args, kwargs)
        batch_size = arguments.pop("batch_size", None)
        x = arguments.get("x")
        if isinstance(x, tf.data.Dataset) and is_text_data(x):
            arguments["x"] = self._text_data(x, None, None, batch_size, arguments,
                                             "steps_per_epoch")
        elif is_text_data(x):
            x, y, sample_weight = (as_arrays(arguments.pop(name, None))
                                   for name in ("x", "y", "sample_weight"))
            split = arguments.pop("validation_split", 0.0)
            if split:  # as Keras splits arrays: the last examples, before shuffling
                (x, y, sample_weight), validation = split_last((x, y, sample_weight), split)
                arguments.setdefault("validation_data", validation)
            arguments["x"] = self._text_data(x, y, sample_weight, batch_size, arguments,
                                             "steps_per_epoch", arguments.pop("shuffle", True))
            arguments["shuffle"] = False  # the pipeline shuffles the examples
        else:
            arguments["batch_size"] = batch_size
        validation = arguments.get("validation_data")
        if isinstance(validation, tf.data.Dataset):
            validation = (validation, None, None)
        if isinstance(validation, (tuple, list)) and is_text_data(validation[0]):
            validation_batch_size = arguments.pop("validation_batch_size", None) or batch_size
            arguments["validation_data"] = self._text_data(
                *(*validation, None, None)[:3], validation_batch_size, arguments,
                "validation_steps")
        return super().fit(**arguments)

    def evaluate(self, *args, **kwargs):
        arguments = arguments_by_name(keras.Model.evaluate, self, args, kwargs)
        if is_text_data(arguments.get("x")):
            arguments["x"] = self._text_data(
                arguments.pop("x"), arguments.pop("y", None), arguments.pop("sample_weight", None),
                arguments.pop("batch_size", None), arguments, "steps")
        return super().evaluate(**arguments)

    def predict(self, *args, **kwargs):
        arguments = arguments_by_name(keras.Model.predict, self, args, kwargs)
        if is_text_data(arguments.get("x")):
            dataset, text_only = self._text_batches(
                arguments.pop("x"), None, None, arguments.pop("batch_size", None))
            arguments["x"] = eagerly_preprocessed(dataset, lambda element: self.preprocess_text(
                element if text_only else element[0], static_shape=self.outputs_per_token))
            if dataset.cardinality() >= 0:
                arguments.setdefault("steps", int(dataset.cardinality()))
        return super().predict(**arguments)

    def _text_data(self, x, y, sample_weight, batch_size, arguments, steps_name, shuffle=False):
        """Batches whose text is preprocessed in the pipeline, read through one iterator."""
        dataset, text_only = self._text_batches(x, y, sample_weight, batch_size, shuffle)

        def preprocess(*element):
            if text_only:
                return self.preprocess_text(element[0] if len(element) == 1 else element, True)
            return (self.preprocess_text(element[0], True), *element[1:])

        dataset = dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
        return read_with_one_iterator(dataset, arguments, steps_name, self.distribute_strategy)

    def _text_batches(self, x, y, sample_weight, batch_size, shuffle=False):
        """`(dataset, text_only)`: batches of text (with their targets unless `text_only`)."""
        if self.preprocessor is None:
            self.preprocess_text(None)  # raises the error that says what is missing
        if isinstance(x, tf.data.Dataset):
            if batch_size is not None:
                raise ValueError("batch_size must be None when the data is a tf.data.Dataset "
                                 "(batch the dataset itself)")
            dataset = x
        else:
            x, y, sample_weight = (as_arrays(x), as_arrays(y), as_arrays(sample_weight))
            check_targets(self, y, given=True)
            data = tuple(part for part in (x, y, sample_weight) if part is not None)
            counts = {len(leaf) for leaf in tf.nest.flatten(data)}
            if len(counts) > 1:
                raise ValueError(f"the text and its targets have different numbers of "
                                 f"examples: {sorted(counts)}")
            dataset = tf.data.Dataset.from_tensor_slices(data if len(data) > 1 else x)
            if shuffle:
                dataset = dataset.shuffle(counts.pop(), reshuffle_each_iteration=True)
            dataset = dataset.batch(batch_size or 32)
        text_only = is_text_spec(dataset.element_spec)
        text_spec = dataset.element_spec if text_only else dataset.element_spec[0]
        if any(spec.shape.rank == 0 for spec in tf.nest.flatten(text_spec)):
            raise ValueError("the dataset yields single texts: batch it first, e.g. "
                             "dataset.batch(32)")
        self._check_text(text_spec)  # here: an error inside a dataset's map reads poorly
        return dataset, text_only

    def _check_text(self, text):
        """Raises one clear error unless `text` (a batch of text, or its `tf.TensorSpec`s)
        is what the model reads (`text_inputs.check_text_form`)."""
        check_text_form(self, text)

    @property
    def trainable_weights(self):
        weights = super().trainable_weights
        if self.trains_pooler or self.encoder.pooler is None:
            return weights
        pooler = {id(weight) for weight in self.encoder.pooler.weights}
        return [weight for weight in weights if id(weight) not in pooler]

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @staticmethod
    def _check_encoder(encoder):
        if not isinstance(encoder, BertEncoder):
            raise TypeError(f"encoder must be a keras_bert_core BertEncoder, got "
                            f"{type(encoder).__name__}")
        return encoder

    def default_compile_args(self):
        """The task's `loss` and `metrics` (and `loss_weights`, `weighted_metrics`)."""
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """Like `keras.Model.compile`; `"auto"` means the task's default.

        Defaults: `BertAdamW(default_learning_rate)` (1e-4 for pretraining, 5e-5 for
        fine-tuning), the task's loss and metrics.
        """
        self._compile_args = _CompileArgs(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        defaults = self.default_compile_args()
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = BertAdamW(learning_rate=self.default_learning_rate)
        if isinstance(loss, str) and loss == "auto":
            loss = defaults["loss"]
            kwargs.setdefault("loss_weights", defaults.get("loss_weights"))
        if isinstance(metrics, str) and metrics == "auto":
            metrics = defaults["metrics"]
            kwargs.setdefault("weighted_metrics", defaults.get("weighted_metrics"))
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        strategy = self.distribute_strategy
        self.jit_compile_per_replica = bool(
            self.jit_compile and strategy.num_replicas_in_sync > 1
            and not isinstance(strategy, tf.distribute.TPUStrategy))
        if self.jit_compile_per_replica and getattr(self.loss, "synchronizes_replicas", False):
            warnings.warn(f"{type(self.loss).__name__} gathers from every replica, which a "
                          "replica's own XLA step cannot: training without XLA under "
                          f"{type(strategy).__name__}", stacklevel=2)
            self.jit_compile_per_replica = self.jit_compile = False
        if self.jit_compile_per_replica:
            self.jit_compile = False
            self._replica_gradients = tf.function(
                self._loss_and_gradients, jit_compile=True, reduce_retracing=True)

    def train_step(self, data):
        if not self.jit_compile_per_replica:
            return super().train_step(data)
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred, gradients = self._replica_gradients(x, y, sample_weight)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights, strict=True))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _loss_and_gradients(self, x, y, sample_weight):
        """Keras's train step up to the gradients (the part that needs no cross-replica
        communication): forward pass, loss (tracked as Keras tracks it), scaled gradients."""
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=True)
            # Keras tracks the unscaled mean (each replica's loss is scaled by 1 / replicas).
            replicas = tf.distribute.get_strategy().num_replicas_in_sync
            loss_tracker(self).update_state(
                loss * replicas, sample_weight=tf.shape(tf.nest.flatten(x)[0])[0])
            loss = self.optimizer.scale_loss(loss)
        return y_pred, tape.gradient(loss, self.trainable_weights)

    def get_compile_config(self):
        return self._compile_args.serialize() if self.compiled else {}

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        # Build the optimizer now, so its saved state has variables to load into.
        self.optimizer.build(self.trainable_variables)

    def _prepare_targets(self, x, y, y_pred, sample_weight):
        """The targets and sample weights the loss and metrics see. By default those of the
        data, where a dict of sample weights may leave outputs out (unweighted): the
        pretrainer takes `{"mlm": masked_weights}`; and dicts may hold entries for outputs
        the model lacks (a masked-LM-only pretrainer reads next-sentence data)."""
        if isinstance(y_pred, dict):
            if isinstance(y, dict):
                missing = sorted(set(y_pred) - set(y))
                if missing:
                    raise ValueError(f"The data has no targets for the model's outputs "
                                     f"{missing}; it has targets {sorted(y)}.")
                y = {name: y[name] for name in y_pred}
            if isinstance(sample_weight, dict):
                sample_weight = {name: sample_weight.get(name) for name in y_pred}
        return y, sample_weight

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        check_targets(self, y)
        y, sample_weight = self._prepare_targets(x, y, y_pred, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        y, sample_weight = self._prepare_targets(x, y, y_pred, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder),
                  "name": self.name, "trainable": self.trainable}
        if self.preprocessor is not None:  # models without one keep the config they had
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        if self.task_settings is not None:  # so do models without settings
            config["task_settings"] = self.task_settings
        return config

    @classmethod
    def from_config(cls, config):
        encoder = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**{**config, "encoder": encoder})
