"""Moved to `keras_bert_core.export.op_allowlists`; kept until export/saved_model.py and
export/tflite.py import from there. Names resolve on use, so importing this module first
does not import export/ (which imports this module) halfway."""


def __getattr__(name):
    from keras_bert_core.export import op_allowlists

    return getattr(op_allowlists, name)
