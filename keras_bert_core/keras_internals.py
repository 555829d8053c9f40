"""Every private Keras name the package uses, one function each, and why no public API serves.

A Keras upgrade that moves one of them breaks here, by name (tests/test_keras_internals.py
has a test per function), not somewhere deep in a user's run.
"""

import functools

try:  # Keras sets these while it serializes a model for a `.keras` file (saving_lib).
    from keras.src.backend.common import global_state as _keras_global_state
except ImportError:  # another Keras layout: configs then keep their vocabulary inline
    _keras_global_state = None


def _private(owner, name):
    try:
        return getattr(owner, name)
    except AttributeError:
        import keras

        raise RuntimeError(
            f"Keras {keras.__version__} has no {type(owner).__name__}.{name}, which "
            "keras_bert_core needs (keras_bert_core/keras_internals.py); install the Keras "
            "version the package names") from None


def writing_keras_file():
    """Whether Keras is writing a `.keras` file now (and configs are going into it).

    Private: `keras.src.backend.common.global_state`. Keras's `saving_lib` serializes the
    model inside its `ObjectSharingScope`, which it enters only to write and to read
    `.keras` files (reading calls no `get_config`); no public API tells a `get_config` where
    its config goes, and a tokenizer must leave its vocabulary out of a `.keras` file's
    config (the file holds it as an asset) but keep it in any other.

    Example:
    >>> writing_keras_file()
    False
    """
    return (_keras_global_state is not None and _keras_global_state.get_global_attribute(
        "shared_objects/id_to_config_map") is not None)


def loss_tracker(model):
    """The `keras.metrics.Mean` that a compiled model's `fit` logs as `loss`.

    Private: `Trainer._loss_tracker`. A train step of its own (the distiller's, a task
    model's per-replica XLA step) must update the tracker Keras reports and resets; a
    public metric of the model's own would be a second `loss` beside Keras's.

    Example:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> loss_tracker(model).name
    'loss'
    """
    return _private(model, "_loss_tracker")


def sublayers(layer):
    """Every layer inside `layer`, at any depth, each once (not `layer` itself).

    Private: `Layer._flatten_layers`. Keras's public `Model.layers` lists only the top
    level; Keras tracks the nested ones without a public way to walk them.

    Example:
    >>> import keras
    >>> inner = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="a")])
    >>> outer = keras.Sequential([keras.Input((2,)), inner, keras.layers.Dense(1, name="b")])
    >>> sorted(layer.name for layer in sublayers(outer) if isinstance(layer, keras.layers.Dense))
    ['a', 'b']
    """
    return list(_private(layer, "_flatten_layers")(include_self=False))


def batch_counter(optimizer):
    """The variable that counts every training batch an optimizer has seen.

    Private: `BaseOptimizer._iterations`. The public `iterations` counts updates: with
    `gradient_accumulation_steps=N` one per N batches, while a resumed run must continue at
    the batch it stopped at.

    Example:
    >>> import keras
    >>> optimizer = keras.optimizers.SGD(gradient_accumulation_steps=2)
    >>> int(batch_counter(optimizer).numpy())
    0
    """
    return _private(optimizer, "_iterations")


def adam_moments(optimizer, variable):
    """`(first moment, second moment)`: the slot variables an Adam optimizer keeps for
    `variable`.

    Private: `Adam._get_variable_index`, `_momentums`, `_velocities`. `BertAdamW` updates
    them with TensorFlow's `ResourceApplyAdam` kernel in one pass; Keras offers its slots
    only as the unlabelled `optimizer.variables` list.

    Example:
    >>> import keras
    >>> weight = keras.Variable([1.0, 2.0])
    >>> optimizer = keras.optimizers.Adam()
    >>> optimizer.build([weight])
    >>> [tuple(slot.shape) for slot in adam_moments(optimizer, weight)]
    [(2,), (2,)]
    """
    index = _private(optimizer, "_get_variable_index")(variable)
    return (_private(optimizer, "_momentums")[index],
            _private(optimizer, "_velocities")[index])


class WeightDecayInUpdateStep:
    """Mixin of a Keras optimizer whose `update_step` applies the decoupled weight decay
    itself, by calling `decay_weight(variable, learning_rate)` first.

    Private: `BaseOptimizer._apply_weight_decay` (overridden: it does nothing here) and
    `_use_weight_decay` (Keras's exclusions, by name and by variable). Keras decays every
    variable in a pass of its own before the update, and its TensorFlow pass computes the
    learning rate, the schedule's every op, once more for each variable, inside a
    cross-replica update of its own: ops that every traced train step builds and every
    step runs (`bench/first_fit.py` times a new model's first `fit` both ways). Keras has
    no public hook for where the decay happens.

    Example:
    >>> import keras, numpy as np
    >>> class DecayingSGD(WeightDecayInUpdateStep, keras.optimizers.SGD):
    ...     def update_step(self, gradient, variable, learning_rate):
    ...         self.decay_weight(variable, learning_rate)
    ...         super().update_step(gradient, variable, learning_rate)
    >>> weight = keras.Variable([1.0])
    >>> DecayingSGD(learning_rate=0.5, weight_decay=0.1).apply([np.zeros(1, "float32")], [weight])
    >>> round(float(weight.numpy()[0]), 4)  # 1 - 0.5 * 0.1 * 1
    0.95
    """

    def _apply_weight_decay(self, variables):
        pass  # `decay_weight` does it, in `update_step`

    def decay_weight(self, variable, learning_rate):
        """`variable -= learning_rate * weight_decay * variable`, unless it is excluded."""
        if self.weight_decay and _private(self, "_use_weight_decay")(variable):
            import keras

            rate = keras.ops.cast(learning_rate * self.weight_decay, variable.dtype)
            variable.assign_sub(variable * rate)


def take_inputs_as_given(layer):
    """Makes `layer` take its positional inputs as they come: strings and Python lists, not
    cast to the layer's dtype.

    Private: `Layer._convert_input_args`, `Layer._allow_non_tensor_positional_args`. Keras
    casts a layer's positional inputs to its dtype and refuses non-tensor ones; a text
    layer takes strings and gives int32 ids, and Keras has no public switch (KerasHub's
    preprocessing layers set the same two attributes).

    Example:
    >>> import keras, tensorflow as tf
    >>> class Lengths(keras.layers.Layer):
    ...     def call(self, texts):
    ...         return tf.strings.length(texts)
    >>> layer = Lengths(dtype="int32")
    >>> take_inputs_as_given(layer)
    >>> layer(["ab", "abc"]).numpy().tolist()
    [2, 3]
    """
    for name in ("_convert_input_args", "_allow_non_tensor_positional_args"):
        _private(layer, name)  # both exist in the Keras the package names
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True


def cache_saving_skipsets():
    """Makes Keras's saving list the attributes it passes over once per kind of object, as
    its cache means to, instead of at every object of every save and load. Called once
    Keras is imported with the package (`keras_bert_core/__init__.py`).

    Private: `keras.src.saving.saving_lib.get_attr_skipset`. To walk a model for `save`,
    `save_weights`, `load_model` or `load_weights`, Keras asks it which attributes to skip
    for every layer, optimizer and metric it meets, and it builds a throwaway `Layer`
    (`Optimizer`, `Metric`...) each time to list them: its cache reads a key it never
    writes (`saving_attr_skiplist_...`, `saving_attr_skipset_...`). The names it walks depend
    on the kind alone, and no public API caches it (`bench/keras_saving.py` times a save and a
    load both ways). Where Keras has no such function, nothing changes.

    Example:
    >>> from keras.src.saving import saving_lib
    >>> cache_saving_skipsets()
    >>> saving_lib.get_attr_skipset("Layer") is saving_lib.get_attr_skipset("Layer")
    True
    """
    try:
        from keras.src.saving import saving_lib
    except ImportError:
        return
    skipset = getattr(saving_lib, "get_attr_skipset", None)
    if skipset is not None and not hasattr(skipset, "cache_info"):
        saving_lib.get_attr_skipset = functools.lru_cache(maxsize=None)(skipset)
