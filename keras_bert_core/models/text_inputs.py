"""What `TaskModel.fit`, `evaluate` and `predict` read their arguments with: which are
text, whether it is the text the model reads (one clear error where it is not), and text
as arrays."""

import inspect
import numbers

import keras
import numpy as np
import tensorflow as tf

# Texts per example of the models that `kbc` tasks build (`task_settings["name"]`), and how
# they are given; other models (built in Python without a task, or multiple choice, which
# checks its own `(contexts, choices)`) read single texts and pairs alike.
_TASK_TEXTS = {"classify": (1, "a list of strings"), "ner": (1, "a list of strings"),
               "pair": (2, "a tuple (first_texts, second_texts) of two lists of strings"),
               "squad": (2, "a tuple (questions, contexts) of two lists of strings")}


def arguments_by_name(method, model, args, kwargs):
    """The arguments of a call of `method` (a `keras.Model` method), by name; raises one
    clear error for an `x` that holds no text to read (see `check_inputs`)."""
    signature = inspect.signature(method)
    bound = signature.bind(model, *args, **kwargs).arguments
    arguments = {}
    for name, value in bound.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif name != "self":
            arguments[name] = value
    check_inputs(arguments.get("x"), method.__name__)
    encoder = getattr(model, "encoder", None)
    if encoder is not None:
        check_ids(encoder.config, arguments.get("x"), method.__name__)
    return arguments


def check_preprocessor(encoder, preprocessor):
    """Raises one clear error unless `preprocessor` is None or a callable, or where it (a
    `BertPreprocessor`) gives ids past the end of the encoder's word embeddings or sequences
    longer than its position table: the model would fail at the first such text, deep inside
    TensorFlow (on a GPU, read zeros silently). `BertConfig.check_fits` with `exact=False`."""
    if preprocessor is not None and not callable(preprocessor):
        raise TypeError(f"preprocessor must be a layer or callable that maps text to the "
                        f"model's inputs, or None; got {type(preprocessor).__name__}")
    tokenizer, seq_length = (getattr(preprocessor, name, None)
                             for name in ("tokenizer", "seq_length"))
    # A tokenizer Keras loads from a .keras file has its vocabulary once the assets load.
    if getattr(tokenizer, "has_vocabulary", False) and isinstance(seq_length, int):
        encoder.config.check_fits(
            tokenizer.vocabulary_size(), seq_length, exact=False,
            vocabulary="the preprocessor's vocabulary",
            seq_length_name="the preprocessor's seq_length")


def check_targets(model, y, given=False):
    """Raises one clear error where `model`'s loss gets no targets, or `fit` or `evaluate`
    was `given` text as its targets `y`: both failed deep inside Keras's loss ("None values
    not supported"), the text read as the second texts of pairs without targets."""
    if given and y is not None and is_text(y):
        raise ValueError(f"{type(model).__name__} {model.name!r} got text as its targets "
                         "(y): targets are numbers (class ids 0 to num_classes - 1 for a "
                         "classifier); map label names to their ids first")
    if y is None and not given and model.loss is not None:
        raise ValueError(f"{type(model).__name__} {model.name!r} got no targets (y) for its "
                         "loss: pass them with the texts, fit(texts, labels) or a dataset of "
                         "(texts, labels) (a dataset of two string tensors is read as pairs "
                         "of texts without targets: labels are numbers, not names)")


def check_inputs(x, call):
    """Raises one clear error where `x`, the inputs of `call` (`"predict"`...), is None, an
    empty batch, texts with a None (or another non-string) among them, a list of numbers,
    or a dict of texts (a dict holds the model's int32 inputs); other inputs pass as they
    are.

    Example:
    >>> check_inputs(["a text", None], "predict")
    Traceback (most recent call last):
    ...
    TypeError: predict got None at x[1], where a text (a string) goes
    """
    if x is None:
        raise TypeError(f"{call} got no inputs (x is None): pass the texts (a list of "
                        "strings), or the dict of int32 token_ids, segment_ids, padding_mask")
    if isinstance(x, dict) and any(is_text(value) for value in x.values()):
        raise ValueError(f"{call} got a dict of texts (keys {sorted(x)}); a dict holds the "
                         "model's int32 token_ids, segment_ids, padding_mask: pass texts as a "
                         "list of strings, or a tuple (first_texts, second_texts) for pairs")
    if not isinstance(x, (list, tuple, np.ndarray)):
        return
    leaves = list(_leaves(x, ""))
    if not leaves:
        raise ValueError(f"{call} got an empty batch: x holds no examples")
    if any(isinstance(leaf, (str, bytes)) or leaf is None for _, leaf in leaves):
        for where, leaf in leaves:
            if not isinstance(leaf, (str, bytes)):
                what = repr(leaf) if leaf is None or np.isscalar(leaf) else \
                    f"a {type(leaf).__name__}"
                raise TypeError(f"{call} got {what} at x{where}, where a text (a string) "
                                "goes")
    if isinstance(x, (list, tuple)) and all(isinstance(leaf, numbers.Number)
                                            for _, leaf in leaves):
        # Keras's own error names no input these models take.
        raise TypeError(f"{call} got a {type(x).__name__} of numbers; a model takes texts (a "
                        "list of strings; it needs a preprocessor) or the dict of int32 "
                        "token_ids, segment_ids, padding_mask")


def check_ids(config, x, call):
    """Raises one clear error where `x`, the dict of a model's inputs given as arrays (not a
    dataset, whose batches are read later), holds token ids with no row in the word
    embeddings, or more positions than the position table (`config`, a `BertConfig`):
    TensorFlow's gather fails deep inside on a CPU, and reads zeros on a GPU. (Segment ids
    go through a one-hot product: one past `type_vocab_size` adds nothing, as for the
    families without segment embeddings.)

    Example:
    >>> from keras_bert_core.config import BertConfig
    >>> ids = np.array([[2, 97, 3]])
    >>> check_ids(BertConfig.preset("tiny", vocab_size=96), {"token_ids": ids}, "predict")
    Traceback (most recent call last):
    ...
    ValueError: predict got token_ids holding 97, but the model's word embeddings have 96 \
rows (vocab_size): ids go from 0 to 95
    """
    ids = _int_array(x.get("token_ids")) if isinstance(x, dict) else None
    if ids is None:
        return
    rows = config.vocab_size
    bad = ids.min() if ids.min() < 0 else ids.max() if ids.max() >= rows else None
    if bad is not None:
        raise ValueError(f"{call} got token_ids holding {bad}, but the model's word embeddings "
                         f"have {rows:,} rows (vocab_size): ids go from 0 to {rows - 1:,}")
    if ids.ndim > 1 and ids.shape[-1] > config.max_sequence_length:
        raise ValueError(f"{call} got token_ids of {ids.shape[-1]} positions, but the model's "
                         f"position table covers {config.max_sequence_length}: cut them to "
                         "at most that many")


def _int_array(value):
    """`value` (an array, an eager tensor or nested lists) as a non-empty integer array, or
    None for anything else (a symbolic tensor, a dataset, floats)."""
    if value is None or isinstance(value, keras.KerasTensor) or (
            isinstance(value, tf.Tensor) and not hasattr(value, "numpy")):
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return array if array.dtype.kind in "iu" and array.size else None


def _leaves(x, where):
    """`(index path, item)` of each item of nested lists, tuples and object arrays; an array
    of strings stands as one string, any other array as itself (its items are not read:
    ids arrays are large), an empty one as nothing."""
    if isinstance(x, np.ndarray) and x.dtype.kind != "O":
        if x.size:
            yield where, "" if x.dtype.kind in "US" else x
    elif isinstance(x, (list, tuple)) or isinstance(x, np.ndarray) and x.ndim:
        for index, item in enumerate(x):
            yield from _leaves(item, f"{where}[{index}]")
    else:
        yield where, x.item() if isinstance(x, np.ndarray) else x


def check_text_form(model, text):
    """Raises one clear error unless `text` (what `preprocess_text` got: a batch, or a tuple
    of segments; or the `tf.TensorSpec`s of such a batch) is what `model` reads.

    The rule: a tuple is always read as the segments of pairs (a list or array is a batch),
    so a model that a `kbc` task built (`task_settings["name"]`) for single texts (classify,
    ner) refuses a tuple of two, even of two strings (pass a list: `["a", "b"]` is two
    texts), and one built for pairs (pair, squad) refuses anything else; a model without a
    task reads both. No model takes more than two segments, or texts of rank above 1.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertClassifier(encoder, 2, task_settings={"name": "classify"},
    ...                            name="topics")
    >>> check_text_form(model, ["a game", "a film"])
    >>> check_text_form(model, ("a game", "a film"))
    Traceback (most recent call last):
    ...
    ValueError: BertClassifier 'topics' reads one text per example (its task is 'classify'); \
got a tuple of 2, which is read as pairs: pass the texts as a list of strings
    """
    segments = text if isinstance(text, tuple) else (text,)
    task = (getattr(model, "task_settings", None) or {}).get("name")
    count, form = _TASK_TEXTS.get(task, (None, "a list of strings, or a tuple (first_texts, "
                                               "second_texts) for pairs"))
    reads = f"{type(model).__name__} {model.name!r} reads"
    for segment in segments:
        shape = shape_of(segment)
        if shape is not None and len(shape) > 1:
            dims = ", ".join("batch" if size is None else str(size) for size in shape)
            raise ValueError(f"{reads} a batch of texts, each a string; got texts of shape "
                             f"[{dims}]: pass {form}")
    if count == 1 and len(segments) > 1:
        raise ValueError(f"{reads} one text per example (its task is {task!r}); got a tuple "
                         f"of {len(segments)}, which is read as pairs: pass the texts as "
                         f"{form}")
    if count == 2 and len(segments) != 2:
        given = "single texts" if len(segments) == 1 else f"a tuple of {len(segments)}"
        raise ValueError(f"{reads} a pair of texts per example (its task is {task!r}); got "
                         f"{given}: pass {form}")
    if len(segments) > 2:
        raise ValueError(f"{reads} one text or a pair per example; got a tuple of "
                         f"{len(segments)} (a tuple holds the two texts of pairs): pass {form}")


def shape_of(text):
    """The shape of text (a string, list, array, tensor or `tf.TensorSpec`) as a tuple;
    None where it is not known (an unknown rank, rows of different lengths)."""
    if not hasattr(text, "shape"):
        try:
            return np.shape(text)
        except ValueError:  # rows of different lengths
            return None
    shape = text.shape
    if isinstance(shape, tuple):
        return shape
    return None if shape.rank is None else tuple(shape.as_list())


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


def eagerly_preprocessed(dataset, preprocess):
    """A dataset of `preprocess(batch)` for each batch of `dataset`, computed eagerly as it
    is read (`predict`): a traced byte-level BPE tokenizer is a large graph, slow to build,
    which one pass over the data need not pay for."""
    first = next(iter(dataset), None)
    if first is None:
        raise ValueError("predict got an empty dataset: it yields no batch of texts")
    peeked = [preprocess(first)]  # for the signature; served once

    def batches():
        for index, element in enumerate(dataset):
            yield peeked.pop() if index == 0 and peeked else preprocess(element)

    # Every length may vary from batch to batch.
    signature = tf.nest.map_structure(
        lambda t: tf.TensorSpec([None] * len(t.shape), tf.as_dtype(t.dtype)), peeked[0])
    return tf.data.Dataset.from_generator(batches, output_signature=signature)


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


def read_with_one_iterator(dataset, arguments, steps_name, strategy):
    """`dataset` repeated, with `arguments[steps_name]` set to its number of batches, so that
    Keras reads it through one iterator. Keras gives a finite dataset two iterators a pass
    (one at its start, one made at its end for the next pass or for nothing), and each
    instantiates the preprocessing map function, tokenizer included, anew: a cost of every
    `fit` epoch, validation and `evaluate` (bench/iterator_start_up.py). Left as it is when
    the steps are given, its length is unknown, or the strategy shards the batches across
    hosts (multi-worker, TPU pods), where a host's share is not the dataset's length."""
    batches = int(dataset.cardinality())
    if (batches <= 0 or arguments.get(steps_name) is not None
            or getattr(strategy, "cluster_resolver", None) is not None):
        return dataset
    arguments[steps_name] = batches
    return dataset.repeat()
