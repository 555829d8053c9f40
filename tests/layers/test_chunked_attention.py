"""Banded (sliding-window) and query-chunked attention equal dense masked attention."""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_bert_core.errors import ConfigError
from keras_bert_core.export.op_allowlists import (
    graph_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)
from keras_bert_core.layers.attention_masks import attention_bias
from keras_bert_core.layers.chunked_attention import attend
from tests.layers.gradients import values_and_gradients

HEADS, SIZE = 2, 8


def dense_attention(query, key, value, padding_mask, window=None):
    """The T x T reference: attention_bias, plus |i - j| <= window // 2 with a window."""
    bias = attention_bias(padding_mask)
    length = ops.shape(query)[2]
    if window is not None:
        positions = np.arange(length)
        outside = np.abs(positions[:, None] - positions[None, :]) > window // 2
        bias = bias + np.where(outside, -1e9, 0.0).astype("float32")
    probs = ops.softmax(ops.matmul(query, ops.swapaxes(key, 2, 3)) + bias, axis=-1)
    context = ops.matmul(probs, value)
    if window is not None:  # queries with no key at all get zeros
        has_keys = ops.cast(ops.max(bias, axis=-1, keepdims=True) > -1e8, context.dtype)
        context = context * has_keys
    return context


def inputs(length, seed=0):
    """Random heads and a mask with a full row, a padded row and a packed row (3 documents,
    then padding)."""
    rng = np.random.default_rng(seed)
    query, key, value = rng.normal(size=(3, 3, HEADS, length, SIZE)).astype("float32")
    mask = np.ones((3, length), "int32")
    mask[1, max(1, length * 2 // 3):] = 0
    mask[2, length // 3:] = 2
    mask[2, length // 2:] = 3
    mask[2, length - max(1, length // 8):] = 0
    return query, key, value, mask


@pytest.mark.parametrize("length,window", [
    (5, 128),     # shorter than the window: one block
    (37, 8),      # not a multiple of the block (4)
    (100, 16),
    (50, 0),      # each query sees itself alone
    (130, 128),   # two blocks and a bit
    (1030, 128),  # many windows
])
def test_banded_attention_equals_dense_masked_attention(length, window):
    query, key, value, mask = inputs(length)
    banded = attend(query, key, value, mask, window=window)
    np.testing.assert_allclose(banded, dense_attention(query, key, value, mask, window),
                               atol=1e-5)


@pytest.mark.parametrize("length,chunk_size", [(5, 512), (37, 8), (100, 100), (300, 64)])
def test_query_chunked_attention_equals_unchunked(length, chunk_size):
    query, key, value, mask = inputs(length)
    mask[0] = 0  # an empty text too: its padding queries attend to all keys, as before
    chunked = attend(query, key, value, mask, chunk_size=chunk_size)
    np.testing.assert_allclose(chunked, dense_attention(query, key, value, mask), atol=1e-5)


@pytest.mark.parametrize("window,chunk_size", [(8, 512), (None, 16)], ids=["banded", "chunked"])
def test_gradients_equal_dense_attention(window, chunk_size):
    query, key, value, mask = (tf.constant(x) for x in inputs(45))
    upstream = tf.constant(np.random.default_rng(1).normal(size=query.shape), tf.float32)
    got = values_and_gradients(
        lambda q, k, v: attend(q, k, v, mask, window=window, chunk_size=chunk_size),
        [query, key, value], upstream)
    want = values_and_gradients(lambda q, k, v: dense_attention(q, k, v, mask, window),
                                [query, key, value], upstream)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_float16_inputs_softmax_in_float32_and_return_float16():
    query, key, value, mask = inputs(40)
    half = [ops.cast(x, "float16") for x in (query, key, value)]
    for window in (8, None):
        context = attend(*half, mask, window=window, chunk_size=16)
        assert context.dtype == "float16"
        np.testing.assert_allclose(ops.cast(context, "float32"),
                                   dense_attention(query, key, value, mask, window), atol=1e-2)


SPECS = [tf.TensorSpec([None, HEADS, None, SIZE])] * 3 + [tf.TensorSpec([None, None], tf.int32)]


@pytest.mark.parametrize("window,chunk_size", [(8, 512), (None, 16)], ids=["banded", "chunked"])
def test_dynamic_lengths_xla_tf_serving_and_tflite_builtins(window, chunk_size):
    def call(query, key, value, padding_mask):
        return attend(query, key, value, padding_mask, window=window, chunk_size=chunk_size)

    traced = tf.function(call, input_signature=SPECS, autograph=False)
    compiled = tf.function(call, jit_compile=True)
    function = traced.get_concrete_function()
    assert not unsupported_tf_serving_ops(graph_op_types(function))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], None)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    content = converter.convert()
    assert not unsupported_tflite_ops(tflite_op_types(content))
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="LiteRT interpreter")
    for length in (45, 7):  # one graph, several lengths
        arrays = inputs(length, seed=length)
        want = dense_attention(*arrays, window)
        np.testing.assert_allclose(traced(*arrays), want, atol=1e-5)
        np.testing.assert_allclose(compiled(*arrays), want, atol=1e-5)
        interpreter = litert.Interpreter(model_content=content)
        named = dict(zip(("query", "key", "value", "padding_mask"), arrays, strict=True))
        details = [(d["index"], next(array for name, array in named.items() if name in d["name"]))
                   for d in interpreter.get_input_details()]
        for index, array in details:
            interpreter.resize_tensor_input(index, array.shape)
        interpreter.allocate_tensors()
        for index, array in details:
            interpreter.set_tensor(index, array)
        interpreter.invoke()
        output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_allclose(output, want, atol=1e-5)


@pytest.mark.parametrize("options", [{"window": -2}, {"window": 1.5}, {"chunk_size": 0}])
def test_bad_window_or_chunk_size_is_a_config_error(options):
    query, key, value, mask = inputs(4)
    with pytest.raises(ConfigError, match="window|chunk_size"):
        attend(query, key, value, mask, **options)
