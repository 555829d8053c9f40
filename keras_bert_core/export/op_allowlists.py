"""Which ops an exported graph may hold, and helpers that list a graph's ops.

TF Serving: TensorFlow core ops (``tf.raw_ops``; the model server links all core kernels)
plus the tf.text ops below. The model server links tf.text through
``@org_tensorflow_text//tensorflow_text:ops_lib`` (tensorflow_serving/model_servers/BUILD,
tf.text pinned to the same minor version in tensorflow_serving/workspace.bzl). We allow a
conservative subset: the ops tf.text's own model-server regression test exercises
(oss_scripts/model_server/save_models.py) and the normalizer/wordpiece ops that ``ops_lib``
has linked for several releases. The ``TFText>`` ops, the trimmers (``RoundRobinTrim``)
among them, stay out: model servers built with older tf.text releases do not register them
(Model Garden's preprocessing export fails there on ``RoundRobinTrim``), and ``BertPacker``
trims with core ops instead. One exception, ``TFText>FastSentencepieceTokenize``, needs
TF Serving 2.20 or later (the evidence is at the op below); it alone gives the
``sentencepiece`` library's ids (``SentencepieceTokenizeOp`` bundles an older
``sentencepiece`` that orders tied pieces differently).

TFLite: builtin ops, plus the custom ops that ``tensorflow_text.tflite_registrar``
(``SELECT_TFTEXT_OPS``) resolves. Flex ops (``Flex*``), regex, case folding and ragged
kernels such as ``RaggedRange`` / ``RaggedGather`` are not among them.
"""

import tensorflow as tf

from keras_bert_core.tensorflow_internals import tflite_schema

TF_SERVING_TEXT_OPS = frozenset(
    {
        # Exercised by tf.text's model-server regression test.
        "CaseFoldUTF8",
        "ConstrainedSequence",
        "MaxSpanningTree",
        "NormalizeUTF8",
        "RegexSplitWithOffsets",
        "RougeL",
        "SentenceFragments",
        "SentencepieceDetokenizeOp",
        "SentencepieceIdToStringOp",
        "SentencepieceOp",
        "SentencepieceTokenizeOp",
        "SentencepieceTokenizeWithOffsetsOp",
        "SentencepieceVocabSizeOp",
        "SplitMergeTokenizeWithOffsets",
        "UnicodeScriptTokenizeWithOffsets",
        "WhitespaceTokenizeWithOffsets",
        "WordpieceTokenizeWithOffsets",
        # Normalizer and wordpiece ops of ops_lib (fast_bert_normalizer, fast_wordpiece,
        # normalize_ops).
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
        "FindSourceOffsets",
        "NormalizeUTF8WithOffsetsMap",
        # SentencePieceTokenizer's ids. TF Serving 2.20.0 pins tf.text 2.20.0
        # (tensorflow_serving/workspace.bzl: strip_prefix "text-2.20.0"), whose ops_lib
        # holds :fast_sentencepiece_tokenizer_cc (tensorflow_text/BUILD; op in
        # core/ops/fast_sentencepiece_ops.cc, kernel in core/kernels/sentencepiece/
        # sentencepiece_tokenizer_kernel.cc). TF Serving 2.12-2.19 pin tf.text 2.12.1, which
        # registers the op too, but its kernel sizes the outputs as int16_t: a batch of more
        # than 32,767 pieces fails (a negative size) or writes past the output (tensorflow/text
        # commit aa839b1, "Change input size from int16_t to int32_t", first in 2.20.0).
        "TFText>FastSentencepieceTokenize",
    }
)

# Custom op names as the TFLite converter writes them and the registrar resolves them.
TFLITE_CUSTOM_OPS = frozenset(
    {
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
        "RaggedTensorToTensor",
        "SentenceFragmentsV2",
        "TFText>ByteSplitByOffsets",
        "TFText>ByteSplitWithOffsets",
        "TFText>FastSentencepieceDetokenize",
        "TFText>FastSentencepieceTokenize",
        "TFText>FastWordpieceDetokenize",
        "TFText>NgramsStringJoin",
        "TFText>RoundRobinGenerateMasks",
        "TFText>RoundRobinTrim",
        "TFText>Utf8Binarize",
        "TFText>WhitespaceTokenizeWithOffsetsV2",
    }
)

_TFLITE_BUILTIN_NAMES = {
    code: name
    for name, code in vars(tflite_schema().BuiltinOperator).items()
    if not name.startswith("_")
}


def graph_op_types(graph):
    """Returns the set of op types in a graph, its functions included.

    Args:
        graph: a `tf.types.experimental.ConcreteFunction`, a `tf.Graph` or a `GraphDef`.

    Calls of library functions are followed into the functions (every function in the
    library is listed), so the set holds the ops that actually run, not function names.
    """
    if hasattr(graph, "graph") and hasattr(graph.graph, "as_graph_def"):
        graph = graph.graph
    graph_def = graph.as_graph_def() if hasattr(graph, "as_graph_def") else graph
    functions = {f.signature.name for f in graph_def.library.function}
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return {node.op for node in nodes} - functions


def tflite_op_types(model_content):
    """Returns the set of op names in a TFLite flatbuffer: builtin names and custom codes."""
    schema = tflite_schema()
    model = schema.Model.GetRootAsModel(bytearray(model_content), 0)
    names = set()
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        # Builtin codes above 127 live in BuiltinCode, older ones in DeprecatedBuiltinCode.
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            names.add(code.CustomCode().decode("utf-8"))
        else:
            names.add(_TFLITE_BUILTIN_NAMES[builtin])
    return names


def unsupported_tf_serving_ops(op_types):
    """The op types that are neither TensorFlow core ops nor allowlisted tf.text ops."""
    core_ops = set(dir(tf.raw_ops))
    return {op for op in op_types if op not in core_ops and op not in TF_SERVING_TEXT_OPS}


def unsupported_tflite_ops(op_types):
    """The op names that are neither TFLite builtins nor allowlisted tf.text custom ops."""
    builtins = set(_TFLITE_BUILTIN_NAMES.values()) - {"CUSTOM", "DELEGATE"}
    return {op for op in op_types if op not in builtins and op not in TFLITE_CUSTOM_OPS}
