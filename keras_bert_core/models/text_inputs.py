"""What `TaskModel.fit`, `evaluate` and `predict` read their arguments with: which are
text, and text as arrays."""

import inspect

import numpy as np
import tensorflow as tf


def arguments_by_name(method, model, args, kwargs):
    """The arguments of a call of `method` (a `keras.Model` method), by name."""
    signature = inspect.signature(method)
    bound = signature.bind(model, *args, **kwargs).arguments
    arguments = {}
    for name, value in bound.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif name != "self":
            arguments[name] = value
    return arguments


def takes_argument(function, name):
    """Whether a layer's `call` (or a callable) takes the keyword argument `name`."""
    try:
        return name in inspect.signature(getattr(function, "call", function)).parameters
    except (TypeError, ValueError):  # no signature to read
        return False


def is_text(x):
    """Whether `x` is text: strings, arrays or tensors of them, or tuples and lists of them."""
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, (tf.Tensor, tf.RaggedTensor)):
        return x.dtype == tf.string
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "US" or (x.dtype.kind == "O" and x.size > 0
                                        and isinstance(x.flat[0], (str, bytes)))
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(is_text(item) for item in x)
    return False


def is_text_spec(spec):
    return all(isinstance(s, tf.TensorSpec) and s.dtype == tf.string
               for s in tf.nest.flatten(spec))


def is_text_data(x):
    """Whether `x` is text, or a dataset whose elements are text or `(text, ...)`."""
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        return is_text_spec(spec) or (isinstance(spec, tuple) and is_text_spec(spec[0]))
    return is_text(x)


def as_arrays(data):
    """Python lists as arrays (a string as a batch of one), keeping tuples and dicts."""
    if data is None:
        return None
    if isinstance(data, dict):
        return {key: as_arrays(value) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(as_arrays(item) for item in data)
    if isinstance(data, (str, bytes)):
        return np.array([data])
    if isinstance(data, (tf.Tensor, np.ndarray)):
        return data
    try:
        return np.array(data)
    except ValueError as error:  # rows of different lengths
        raise ValueError(f"the data must be rectangular (every example with as many items): "
                         f"{error}") from None


def split_last(parts, fraction):
    """`parts` (nests of arrays) split before their last `fraction` of examples."""
    if not 0 < fraction < 1:
        raise ValueError(f"validation_split must be between 0 and 1, got {fraction}")
    count = len(tf.nest.flatten(parts[0])[0])
    cut = int(count * (1 - fraction))
    if cut in (0, count):
        raise ValueError(f"validation_split={fraction} leaves no examples on one side of "
                         f"{count}")
    first, second = ([tf.nest.map_structure(lambda a, s=s: a[s], part) if part is not None
                      else None for part in parts]
                     for s in (slice(None, cut), slice(cut, None)))
    return tuple(first), tuple(second)
