"""TFLite export: one `.tflite` file, tokenizer inside, for phones and edge devices."""

import os
import tempfile
import warnings

import tensorflow as tf

from keras_bert_core.export.limits import MAX_TEXT_BYTES, check_limits
from keras_bert_core.export.saved_model import serving_module
from keras_bert_core.export.tasks import serving_task
from keras_bert_core.files import replaced_when_complete
from keras_bert_core.text.op_allowlists import tflite_op_types, unsupported_tflite_ops
from keras_bert_core.text.preprocessor import BertPreprocessor

QUANTIZATIONS = (None, "dynamic", "float16")
INPUT_KINDS = ("text", "ids")


def export_tflite(model, preprocessor, path, quantize=None, *, inputs="text", pairs=False,
                  label_names=None, max_answer_length=30, max_text_bytes=MAX_TEXT_BYTES,
                  static_shape=None):
    """Writes a `.tflite` file that serves `model`, from raw text or from ids.

    With `inputs="text"` the signature `serving_default` takes raw strings, `[batch]`
    each (usually one string per call on a phone; the interpreter resizes for more), and
    tokenizes inside with the preprocessor's TFLite-compatible pipeline (builtin ops and
    tf.text's custom ops; see `BertTokenizer` for how its ids compare with the reference
    tokenizer's). Each call is padded to its longest text, rounded up to a multiple of 8,
    as in the SavedModel: a short text does not pay for `preprocessor.seq_length`
    positions (the interpreter resizes its tensors when the width changes). With
    `static_shape=True` every row is padded to `seq_length` instead, for delegates that
    need fixed shapes (GPU, NNAPI). With `inputs="ids"` the signature `predict_ids` takes
    int32 `token_ids`, `segment_ids`, `padding_mask` `[batch, width]` (`[batch,
    seq_length]` with `static_shape=True`).

    Outputs are those of `export_saved_model` but the strings cut from the text (a span
    labeler's `answer`, a token classifier's `tokens` and `words`), as TFLite has no string
    slicing: `answer_start`/`answer_end` and `word_begin`/`word_end` locate them in the
    text's UTF-8 bytes.

    The file holds only TFLite builtin ops and the tf.text custom ops that
    `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` registers (no Flex ops); an app
    registers those (see `export/README.md` and `export/run_tflite.py`).

    Each text is tokenized from its first `max_text_bytes` bytes only, cut at a UTF-8
    character boundary, as `export_saved_model` cuts them (the tokenizer keeps that many
    bytes of each text after splitting it into bytes): one long text cannot take the app's
    memory. The file has no batch limit: the app, not a remote client, sizes each call.

    The file is written beside `path` and renamed into place when complete.

    Args:
        model: as for `export_saved_model`.
        preprocessor: the `BertPreprocessor` the model was trained with; its settings
            (vocabulary, casing, `seq_length`, truncation) are copied into a
            TFLite-compatible one.
        path: the `.tflite` file to write.
        quantize: None (float32 weights), `"dynamic"` (int8 weights, dynamic-range
            quantization) or `"float16"` (float16 weights).
        inputs: `"text"` or `"ids"`.
        pairs: serve text pairs (`text_a`, `text_b`), as for `export_saved_model`.
        label_names: class or tag names, as for `export_saved_model`.
        max_answer_length: longest answer of a span labeler, in wordpieces.
        max_text_bytes: longer texts are cut to this many bytes before tokenization, at a
            UTF-8 character boundary (None: no limit); with `inputs="ids"`, unused.
        static_shape: True pads every row to `preprocessor.seq_length` (fixed tensor
            shapes); False pads each call to its longest text. None (default): False,
            unless the model converts only with fixed shapes (then True, with a warning).

    Returns:
        `path`.

    Raises:
        ValueError: bad arguments, or the converted graph holds an op outside the TFLite
            allowlist (named in the message).

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.models.classifier import BertClassifier
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "."]
    >>> pre = BertPreprocessor(vocab, seq_length=16)
    >>> model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=len(vocab), max_position_embeddings=16)), num_classes=2)
    >>> path = export_tflite(model, pre, os.path.join(tempfile.mkdtemp(), "film.tflite"),
    ...                      quantize="dynamic")
    >>> "FastWordpieceTokenizeWithOffsets" in tflite_op_types(open(path, "rb").read())
    True
    """
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {QUANTIZATIONS}, got {quantize!r}")
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")
    check_limits(None, max_text_bytes)
    task = serving_task(model, preprocessor, pairs, label_names, max_answer_length)
    tflite_preprocessor = BertPreprocessor(
        preprocessor.vocabulary, seq_length=preprocessor.seq_length,
        lower_case=preprocessor.lower_case, truncation=preprocessor.truncation,
        tflite_compatible=True, max_text_bytes=max_text_bytes)
    signature = "serving_default" if inputs == "text" else "predict_ids"

    def convert(static_shape):
        module, concrete = serving_module(model, tflite_preprocessor, task,
                                          signatures=(signature,), static_shape=static_shape,
                                          text_outputs=False)
        content = _convert(module, concrete, signature, quantize)
        return content, unsupported_tflite_ops(tflite_op_types(content))

    content, unsupported = convert(bool(static_shape))
    if unsupported and static_shape is None:
        # E.g. `x[:, None]` in the user's own layers: TFLite converts a new axis only on a
        # static shape. A padded file beats no file.
        content, unsupported_static = convert(True)
        if not unsupported_static:
            warnings.warn(
                f"{model.name!r} converts to TFLite only with fixed shapes "
                f"({sorted(unsupported)} otherwise): every text is padded to "
                f"seq_length {preprocessor.seq_length}. A new axis made with "
                "keras.ops.expand_dims instead of x[:, None] lets short texts run faster.",
                stacklevel=2)
        unsupported = unsupported_static
    if unsupported:
        raise ValueError(f"The TFLite graph of {model.name!r} holds ops that neither TFLite "
                         f"nor tf.text's registrar provide: {sorted(unsupported)}")
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    # An app or a file watcher never opens a half-written file.
    with replaced_when_complete(path) as partial, open(partial, "wb") as f:
        f.write(content)
    return path


def _convert(module, concrete, signature, quantize):
    """The `.tflite` flatbuffer of one signature of a serving module."""
    with tempfile.TemporaryDirectory() as saved_model_dir:
        # From a SavedModel, the converter freezes the variables into constants.
        tf.saved_model.save(module, saved_model_dir, signatures=concrete)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved_model_dir, signature_keys=[signature])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # tf.text's ops, resolved by its registrar
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()
