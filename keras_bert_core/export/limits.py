"""Request limits inside an exported graph: the largest batch and the longest text.

A serving graph otherwise takes whatever a client sends: the tokenizer's memory and time
grow with the bytes of a request, the model's with its rows, so one oversized request can
take a server's memory for minutes.
"""

import tensorflow as tf

from keras_bert_core.text.string_batches import check_max_text_bytes

# A few times the batch that CPU serving gains from; TF Serving's batching file
# (export/batching.config) merges requests up to the same size.
MAX_BATCH_SIZE = 128
# 64 bytes per position of the longest BERT input (512 wordpieces); English text takes about
# 5 bytes per wordpiece, so a cut text still fills `seq_length` with the same wordpieces.
MAX_TEXT_BYTES = 32_768


def check_limits(max_batch_size, max_text_bytes):
    """Raises ValueError unless each limit is None (no limit) or a positive integer (at least
    4 bytes, one UTF-8 character, for `max_text_bytes`).

    Example:
    >>> check_limits(MAX_BATCH_SIZE, None)
    >>> check_limits(0, MAX_TEXT_BYTES)
    Traceback (most recent call last):
    ...
    ValueError: max_batch_size must be a positive integer or None, got 0
    """
    if max_batch_size is not None and (not isinstance(max_batch_size, int) or isinstance(
            max_batch_size, bool) or max_batch_size < 1):
        raise ValueError(f"max_batch_size must be a positive integer or None, got "
                         f"{max_batch_size!r}")
    check_max_text_bytes(max_text_bytes)


def limit_batch(inputs, max_batch_size):
    """`inputs` (a dict of tensors, batch first), which fail with InvalidArgument naming the
    limit when they hold more than `max_batch_size` rows (None: no limit).

    Example:
    >>> try:
    ...     limit_batch({"text": tf.constant(["a", "b"])}, 1)
    ... except tf.errors.InvalidArgumentError as e:
    ...     print(e.message.splitlines()[0])
    a request holds at most 1 rows (max_batch_size of this export); split it into smaller requests
    """
    if max_batch_size is None:
        return inputs
    rows = tf.shape(next(iter(inputs.values())))[0]
    check = tf.debugging.assert_less_equal(
        rows, max_batch_size,
        message=f"a request holds at most {max_batch_size} rows (max_batch_size of this "
                "export); split it into smaller requests")
    with tf.control_dependencies([check]):  # before any work on the rows
        return {name: tf.identity(value) for name, value in inputs.items()}


def check_request_shapes(inputs):
    """`inputs` (a dict of tensors, batch first), which fail with InvalidArgument naming the
    inputs unless they all hold the same number of rows, inputs of one rank have one shape
    (`predict_ids`' three), and each has the sizes its signature fixes (`choices` `[batch,
    num_choices]`); the messages name the inputs unquoted (TensorFlow escapes quotes in
    them). The signature's shapes are not checked by TF Serving; without this a
    row of one input would be paired with every row of another, or fail deep in the graph.

    Example:
    >>> try:
    ...     check_request_shapes({"text_a": tf.constant(["a", "b"]), "text_b": tf.constant(["c"])})
    ... except tf.errors.InvalidArgumentError as e:
    ...     print(e.message.splitlines()[0])
    inputs text_a and text_b must hold the same number of rows (one example a row)
    """
    names = sorted(inputs)
    checks = []
    for name in names:
        value, shape = inputs[name], tf.shape(inputs[name])
        if any(size is not None for size in value.shape[1:]):
            # Compared by the number of values: a check of `shape[i]` against the size the
            # signature fixes would be folded away by Grappler, which takes the size as known.
            expected = shape[0]
            for axis, size in enumerate(value.shape[1:], start=1):
                expected *= shape[axis] if size is None else size
            wanted = ", ".join(str(size or "?") for size in value.shape[1:])
            checks.append(tf.debugging.assert_equal(
                tf.size(value), expected,
                message=f"input {name} must have shape [batch, {wanted}]"))
        same_rank = next(other for other in names if inputs[other].shape.rank == value.shape.rank)
        if same_rank != name:
            checks.append(tf.debugging.assert_equal(
                shape, tf.shape(inputs[same_rank]),
                message=f"inputs {same_rank} and {name} must hold the same number of rows "
                        "(one example a row)" if value.shape.rank == 1 else
                        f"inputs {same_rank} and {name} must have the same shape"))
        elif name != names[0]:
            checks.append(tf.debugging.assert_equal(
                shape[0], tf.shape(inputs[names[0]])[0],
                message=f"inputs {names[0]} and {name} must hold the same number of rows "
                        "(one example a row)"))
    if not checks:
        return inputs
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in inputs.items()}
