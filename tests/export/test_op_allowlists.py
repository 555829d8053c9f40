"""Exported preprocessing graphs hold only allowlisted ops; the TFLite model runs in LiteRT."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_core.export.op_allowlists import (
    graph_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)
from keras_bert_core.text import BertPreprocessor, BertTokenizer
from tests.text.fuzz_texts import tokenizer_corpus

STRINGS = tf.TensorSpec([None], tf.string)
# The ops of a graph do not depend on the vocabulary's size.
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", "."]


@pytest.fixture(scope="module")
def corpus():
    return tokenizer_corpus()


def traced(function, *specs):
    return tf.function(function, input_signature=list(specs), autograph=False)


def to_tflite(function, trackable):
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], trackable
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True  # the tf.text ops, resolved by tf.text's registrar
    return converter.convert()


def litert_runner(model_content):
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="LiteRT interpreter")
    interpreter = litert.InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=model_content,
    )
    return interpreter.get_signature_runner()


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_preprocessing_graphs_hold_only_tf_serving_ops(lower_case):
    preprocessor = BertPreprocessor(TINY_VOCAB, lower_case=lower_case)
    tokenizer = preprocessor.tokenizer
    functions = [
        traced(lambda text: preprocessor(text), STRINGS),
        traced(lambda a, b: preprocessor((a, b), static_shape=False), STRINGS, STRINGS),
        traced(lambda text: tokenizer.tokenize_with_offsets(text), STRINGS),
    ]
    for function in functions:
        op_types = graph_op_types(function.get_concrete_function())
        assert "FastWordpieceTokenizeWithOffsets" in op_types
        assert ("NormalizeUTF8" in op_types) == lower_case
        assert unsupported_tf_serving_ops(op_types) == set()


def test_graph_op_types_follows_function_calls():
    @tf.function
    def inner(x):
        return tf.sin(x)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def outer(x):
        return tf.cond(x > 0, lambda: inner(x), lambda: tf.cos(x))

    function = outer.get_concrete_function()
    op_types = graph_op_types(function)
    assert {"Sin", "Cos", "Greater"} <= op_types
    assert not any("inner" in op or "lambda" in op for op in op_types)
    assert graph_op_types(function.graph.as_graph_def()) == op_types


def test_ops_outside_the_allowlists_are_reported():
    trimmer = tf_text.RoundRobinTrimmer(8)
    ids = tf.RaggedTensorSpec([None, None], tf.int32, 1)
    trim = traced(lambda a, b: trimmer.trim([a, b]), ids, ids)
    op_types = graph_op_types(trim.get_concrete_function())
    assert unsupported_tf_serving_ops(op_types) == {"TFText>RoundRobinTrim"}
    # Of the TFText> ops, only the fast SentencePiece tokenizer is allowed (TF Serving 2.20).
    fast_sentencepiece = {"TFText>FastSentencepieceTokenize", "TFText>FastSentencepieceDetokenize",
                          "TFText>ByteSplitWithOffsets"}
    assert unsupported_tf_serving_ops(fast_sentencepiece) == fast_sentencepiece - {
        "TFText>FastSentencepieceTokenize"}
    assert unsupported_tflite_ops({"ADD", "FastBertNormalize", "FlexRaggedRange"}) == {
        "FlexRaggedRange"
    }
    # The reference pipeline needs regex, case and Unicode ops that TFLite does not have.
    tokenizer = BertTokenizer(TINY_VOCAB)
    content = to_tflite(traced(lambda text: tokenizer(text).flat_values, STRINGS), tokenizer)
    assert {"StaticRegexReplace", "StringLower"} <= unsupported_tflite_ops(
        tflite_op_types(content)
    )


def test_tflite_tokenizer_runs_in_litert_with_the_tf_ids_and_offsets(vocab_file, corpus):
    tokenizer = BertTokenizer(vocab_file, tflite_compatible=True)

    @tf.function(input_signature=[STRINGS])
    def tokenize(text):
        ids, starts, ends = tokenizer.tokenize_with_offsets(text)
        return {"ids": ids.flat_values, "row_splits": ids.row_splits,
                "starts": starts.flat_values, "ends": ends.flat_values}

    content = to_tflite(tokenize, tokenizer)
    op_types = tflite_op_types(content)
    assert {"TFText>ByteSplitWithOffsets", "TFText>FastWordpieceDetokenize",
            "FastWordpieceTokenizeWithOffsets"} <= op_types
    assert unsupported_tflite_ops(op_types) == set()

    run = litert_runner(content)
    for i in range(0, len(corpus), 1000):
        batch = corpus[i : i + 1000]
        ours = run(text=np.array(batch, dtype=object))
        expected = tokenize(tf.constant(batch))
        for name, values in expected.items():
            np.testing.assert_array_equal(ours[name], values.numpy(), err_msg=name)


def test_tflite_preprocessor_packs_pairs_like_tf(vocab_file, corpus):
    preprocessor = BertPreprocessor(vocab_file, seq_length=64, tflite_compatible=True,
                                    static_shape=False)

    @tf.function(input_signature=[STRINGS, STRINGS])
    def preprocess(a, b):
        return preprocessor((a, b))

    content = to_tflite(preprocess, preprocessor)
    assert unsupported_tflite_ops(tflite_op_types(content)) == set()
    run = litert_runner(content)
    a, b = corpus[:200:2], corpus[1:200:2]
    ours = run(a=np.array(a, dtype=object), b=np.array(b, dtype=object))
    expected = preprocess(tf.constant(a), tf.constant(b))
    assert set(ours) == set(expected)
    for name, values in expected.items():
        assert ours[name].dtype == np.int32
        np.testing.assert_array_equal(ours[name], values.numpy(), err_msg=name)
