"""Exports: a SavedModel for TF Serving and a `.tflite` file, both taking raw text, and the
op allowlists they are checked against."""

from keras_bert_core.export.op_allowlists import (
    TF_SERVING_TEXT_OPS,
    TFLITE_CUSTOM_OPS,
    graph_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)
from keras_bert_core.export.saved_model import (
    export_saved_model,
    load_saved_model,
    saved_model_op_types,
)
from keras_bert_core.export.tflite import export_tflite
from keras_bert_core.export.warmup import read_warmup_requests, write_warmup_requests

__all__ = ["TFLITE_CUSTOM_OPS", "TF_SERVING_TEXT_OPS", "export_saved_model", "export_tflite",
           "graph_op_types", "load_saved_model", "read_warmup_requests", "saved_model_op_types",
           "tflite_op_types", "unsupported_tf_serving_ops", "unsupported_tflite_ops",
           "write_warmup_requests"]
