"""Exports: a SavedModel for TF Serving and a `.tflite` file, both taking raw text."""

from keras_bert_core.export.saved_model import (
    export_saved_model,
    load_saved_model,
    saved_model_op_types,
)
from keras_bert_core.export.tflite import export_tflite
from keras_bert_core.export.warmup import read_warmup_requests, write_warmup_requests

__all__ = ["export_saved_model", "export_tflite", "load_saved_model", "read_warmup_requests",
           "saved_model_op_types", "write_warmup_requests"]
