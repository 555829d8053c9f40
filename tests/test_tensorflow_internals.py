"""Each private TensorFlow / LiteRT / tf.text name of `keras_bert_core.tensorflow_internals`
is still there and does what the package needs: an upgrade that moves one fails here, by
name."""

import inspect
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_core import tensorflow_internals

SENTENCEPIECE_MODEL = os.path.join(os.path.dirname(__file__), "text", "data", "sentencepiece",
                                   "spiece.model")


def _converter():
    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32)])
    def double(x):
        return {"y": x * 2.0}

    return tf.lite.TFLiteConverter.from_concrete_functions([double.get_concrete_function()])


def test_tensorflow_lite_python_schema_py_generated_reads_a_tflite_file():
    schema = tensorflow_internals.tflite_schema()
    model = schema.Model.GetRootAsModel(bytearray(_converter().convert()), 0)
    codes = [max(model.OperatorCodes(i).BuiltinCode(),
                 model.OperatorCodes(i).DeprecatedBuiltinCode())
             for i in range(model.OperatorCodesLength())]
    assert schema.BuiltinOperator.MUL in codes, "tensorflow.lite.python.schema_py_generated"
    assert isinstance(schema.BuiltinOperator.CUSTOM, int)


def test_tensorflow_lite_python_convert_mlir_quantize_takes_denylisted_ops():
    from tensorflow.lite.python import convert

    assert "denylisted_ops" in inspect.signature(convert.mlir_quantize).parameters, (
        "tensorflow.lite.python.convert.mlir_quantize(denylisted_ops=)")


def test_converter_experimental_custom_op_registerers():
    converter = _converter()
    assert hasattr(converter.target_spec, "_experimental_custom_op_registerers"), (
        "TFLiteConverter.target_spec._experimental_custom_op_registerers")
    tensorflow_internals.set_custom_op_registerers(converter, ("TFLite_TextRegisterer",))
    assert converter.target_spec._experimental_custom_op_registerers == [
        "TFLite_TextRegisterer"]


def test_converter_experimental_calibrate_only_gives_a_calibrated_float_model():
    converter = _converter()
    assert hasattr(converter, "_experimental_calibrate_only"), (
        "TFLiteConverter._experimental_calibrate_only")
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: iter([[np.ones((1, 4), np.float32)]])
    tensorflow_internals.calibrate_only(converter)
    calibrated = converter.convert()
    quantized = tensorflow_internals.mlir_quantize(calibrated, denylisted_ops=[])
    assert isinstance(quantized, bytes) and quantized != calibrated


def test_tensorflow_text_sentencepiece_model_resource_is_shared_by_name():
    from tensorflow_text.python.ops import sentencepiece_tokenizer

    assert hasattr(sentencepiece_tokenizer, "_SentencepieceModelResource"), (
        "tensorflow_text.python.ops.sentencepiece_tokenizer._SentencepieceModelResource")
    assert hasattr(sentencepiece_tokenizer.gen_sentencepiece_tokenizer, "sentencepiece_op"), (
        "tensorflow_text.python.ops.sentencepiece_tokenizer.gen_sentencepiece_tokenizer"
        ".sentencepiece_op")
    with open(SENTENCEPIECE_MODEL, "rb") as f:
        model = f.read()
    expected = tf_text.SentencepieceTokenizer(model, out_type=tf.int32)
    tokenizer = tf_text.SentencepieceTokenizer(model, out_type=tf.int32)
    assert hasattr(tokenizer, "_model_resource"), "SentencepieceTokenizer._model_resource"
    shared = tensorflow_internals.share_sentencepiece_model(tokenizer, model)
    other = tensorflow_internals.share_sentencepiece_model(
        tf_text.SentencepieceTokenizer(model, out_type=tf.int32), model)
    assert shared is tokenizer
    assert tokenizer._model_resource._shared_name == other._model_resource._shared_name
    texts = tf.constant(["hello world", "a test"])
    ids = expected.tokenize(texts).to_list()
    tf.random.set_seed(0)  # clears the kernel cache, and the unshared resources with it
    assert tokenizer.tokenize(texts).to_list() == ids


def test_tensorflow_text_regex_split_op_splits_as_the_public_function():
    from tensorflow_text.python.ops import regex_split_ops

    assert hasattr(regex_split_ops, "gen_regex_split_ops"), (
        "tensorflow_text.python.ops.regex_split_ops.gen_regex_split_ops")
    text = tf.constant(["hello  there, world", "", "a"])
    expected = tf_text.regex_split_with_offsets(text, r"\s+|,", ",")
    got = tensorflow_internals.regex_split_with_offsets(text, r"\s+|,", ",")
    for a, b in zip(got, expected, strict=True):
        assert a.to_list() == b.to_list()


def test_control_flow_util_graph_or_parents_in_xla_context_sees_jit_compile():
    seen = {}

    @tf.function(jit_compile=True)
    def compiled(x):
        seen["compiled"] = tensorflow_internals.traced_into_xla()
        return x + 1.0

    @tf.function
    def plain(x):
        seen["plain"] = tensorflow_internals.traced_into_xla()
        return compiled(x)

    plain(tf.constant(1.0))
    assert seen == {"plain": False, "compiled": True}, (
        "tensorflow.python.ops.control_flow_util.GraphOrParentsInXlaContext")
    assert tensorflow_internals.traced_into_xla() is False  # eager
