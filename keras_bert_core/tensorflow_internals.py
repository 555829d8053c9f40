"""Every private TensorFlow, LiteRT and tf.text name the package uses, one function each.

Each says why no public API serves. tests/test_tensorflow_internals.py checks every one by
name, so an upgrade that moves one fails there, not deep in a user's export. TensorFlow is
imported inside the functions: `kbc --help` must answer without it.
"""

import functools
import hashlib


def tflite_schema():
    """LiteRT's flatbuffer schema (`tensorflow.lite.python.schema_py_generated`), to read
    the operator codes of a `.tflite` file: TensorFlow has no public reader of them
    (`tf.lite.experimental.Analyzer` prints a text report), and `ai_edge_litert`, which
    ships the schema too, is an optional dependency while the export is core."""
    from tensorflow.lite.python import schema_py_generated

    return schema_py_generated


def mlir_quantize(calibrated_model, denylisted_ops):
    """The int8 model of a calibrated `.tflite` flatbuffer, with the builtin op types in
    `denylisted_ops` left float (`tensorflow.lite.python.convert.mlir_quantize`): the public
    converter quantizes every op it can and takes no op types to leave out."""
    from tensorflow.lite.python import convert

    return convert.mlir_quantize(calibrated_model, denylisted_ops=denylisted_ops)


def set_custom_op_registerers(converter, registerers):
    """Gives a `tf.lite.TFLiteConverter` the registerers of custom ops (tf.text's
    `SELECT_TFTEXT_OPS`) its calibrator needs to run the model
    (`target_spec._experimental_custom_op_registerers`): the converter has no public
    option for them."""
    converter.target_spec._experimental_custom_op_registerers = list(registerers)


def calibrate_only(converter):
    """Makes a `tf.lite.TFLiteConverter` return the calibrated float model, to be quantized
    by `mlir_quantize` (`_experimental_calibrate_only`): the converter has no public way to
    stop after calibration."""
    converter._experimental_calibrate_only = True


def share_sentencepiece_model(tokenizer, model):
    """Puts a tf.text `SentencepieceTokenizer` on a `SentencepieceOp` resource shared by name
    (the model's digest), so every tokenizer of `model` in the process uses one, and it
    outlives TensorFlow's kernel cache. tf.text leaves the resource private to the op's
    kernel, and TensorFlow drops eager kernels, and so the resource under every tokenizer of
    the model, whenever its kernel cache is cleared (`tf.random.set_seed` and
    `keras.utils.set_random_seed` clear it); tf.text has no public way to name the resource
    (`tensorflow_text.python.ops.sentencepiece_tokenizer`: `_SentencepieceModelResource`,
    its `_model`, the tokenizer's `_model_resource`).

    Returns:
        `tokenizer`.
    """
    tokenizer._model_resource = _shared_sentencepiece_resource_class()(model)
    return tokenizer


@functools.cache
def _shared_sentencepiece_resource_class():
    from tensorflow_text.python.ops import sentencepiece_tokenizer

    class SharedSentencepieceModel(sentencepiece_tokenizer._SentencepieceModelResource):
        def __init__(self, model):
            self._shared_name = ("keras_bert_core_sentencepiece_"
                                 + hashlib.sha256(model).hexdigest())
            super().__init__(model, "SentencepieceModel")

        def _create_resource(self):
            return sentencepiece_tokenizer.gen_sentencepiece_tokenizer.sentencepiece_op(
                model=self._model, shared_name=self._shared_name)

    return SharedSentencepieceModel


def regex_split_with_offsets(text, delimiter_pattern, kept_delimiter_pattern):
    """`tf_text.regex_split_with_offsets` of a 1-D string tensor, its ragged results built
    without validating asserts (`tensorflow_text.python.ops.regex_split_ops`'s
    `gen_regex_split_ops`, the op behind it). The public function validates the row splits
    of its three results, which the op itself made: nine asserts, each a `tf.cond` whose two
    branch graphs every trace builds and every tf.data iterator instantiates; tf.text has
    no option to skip them (bench/tokenizer_trace_time.py)."""
    import tensorflow as tf
    from tensorflow_text.python.ops import regex_split_ops

    split = regex_split_ops.gen_regex_split_ops.regex_split_with_offsets
    pieces, starts, ends, row_splits = split(text, f"({delimiter_pattern})",
                                             f"({kept_delimiter_pattern})")
    return tuple(tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
                 for values in (pieces, starts, ends))


def traced_into_xla():
    """Whether the ops being traced now go into an XLA-compiled function (a
    `tf.function(jit_compile=True)`, Keras's `jit_compile` step, or a function called in one)
    (`tensorflow.python.ops.control_flow_util.GraphOrParentsInXlaContext`): XLA needs static
    shapes, and TensorFlow has no public way to ask whether a trace is compiled by it."""
    import tensorflow as tf
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())
