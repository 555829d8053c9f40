"""TFLite export: one `.tflite` file, tokenizer inside, for phones and edge devices."""

import os
import tempfile
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_core import tensorflow_internals
from keras_bert_core.export.limits import MAX_TEXT_BYTES, check_limits
from keras_bert_core.export.op_allowlists import tflite_op_types, unsupported_tflite_ops
from keras_bert_core.export.saved_model import serving_module
from keras_bert_core.files import replaced_when_complete
from keras_bert_core.models.encoder import BertEncoder
from keras_bert_core.tasks.serving_dispatch import serving_task
from keras_bert_core.text.vocabulary.files import BYTE_PAIR

QUANTIZATIONS = (None, "dynamic", "float16", "int8")
# With quantize="int8", the ops that run on int8 activations; all others stay float32. A
# transformer's residual sums, layer norms, GELU and softmax lose too much in int8 (the
# labels change); the matrix products are where int8 kernels (XNNPACK's on ARM) pay off.
# See bench/serving_peers.py for speed against the other options.
INT8_OPS = frozenset({"FULLY_CONNECTED", "GATHER"})
INPUT_KINDS = ("text", "ids")
# Why a byte-level BPE (RoBERTa) preprocessor cannot run inside a .tflite file: converted,
# BytePairTokenizer keeps these TensorFlow ops, which are neither TFLite builtins nor ops
# that tf.text's TFLite registrar resolves: GPT-2's pre-tokenization regex, the string ops
# that cut words into bytes and deduplicate them, the hash table of merge ranks, and
# ragged kernels. tests/export/test_family_exports.py converts the tokenizer and checks it.
BPE_TFLITE_BLOCKING_OPS = (
    "RegexSplitWithOffsets", "StaticRegexFullMatch", "StaticRegexReplace",
    "Substr", "StringJoin", "StringLength", "UnicodeDecode", "UnicodeEncode", "Unique",
    "HashTableV2", "LookupTableImportV2", "LookupTableFindV2",
    "RaggedRange", "RaggedGather", "InvertPermutation",
)


def export_tflite(model, preprocessor, path, quantize=None, *, inputs="text", pairs=False,
                  label_names=None, max_answer_length=30,
                  null_score_threshold=None, max_text_bytes=MAX_TEXT_BYTES,
                  static_shape=None, calibration_texts=None):
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

    A model trained in mixed precision (`"mixed_float16"`, `"mixed_bfloat16"`) is converted
    from a float32 copy with its weights: TFLite's kernels compute in float32
    (`quantize="float16"` is the way to halve the file).

    An embedder (`BertEmbedder`) answers `embedding`, its vectors for the texts as given:
    a prompt is put before each text by the app (a model with a default prompt is
    refused, naming it).

    Text in works with WordPiece (BERT, DistilBERT) and SentencePiece (ALBERT)
    preprocessors. A byte-level BPE (RoBERTa) preprocessor takes `inputs="ids"` only: its
    tokenizer's ops (`BPE_TFLITE_BLOCKING_OPS`: a regex split, string and hash-table ops)
    have no TFLite kernels, so the app tokenizes (e.g. with Hugging Face `tokenizers`) and
    the file takes the ids.

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
            TFLite-compatible one (with text in).
        path: the `.tflite` file to write.
        quantize: what the weights and activations are stored and computed in:

            - None: float32 throughout; the reference the others are checked against.
            - `"dynamic"`: int8 weights (per output channel), float32 activations, each
              matrix product's input quantized to int8 on the fly (dynamic-range
              quantization). A quarter of the float32 file; XNNPACK (the interpreter's
              default CPU delegate) runs these products with int8 kernels. The fast
              choice for CPUs, and the usual choice: no calibration, labels rarely move.
            - `"int8"`: full-integer quantization calibrated on `calibration_texts`:
              int8 weights and int8 activations, with scales fixed from the calibration
              texts, for the matrix products and embedding lookups (`INT8_OPS`); residual
              sums, layer norms, GELU and softmax stay float32, which in int8 change labels.
              For runtimes and accelerators that want fixed activation scales; calibrate
              on texts like those the app will see. Check its labels against float32
              (`kbc export --calibration` reports the agreement).
            - `"float16"`: float16 weights, float32 compute on CPU (half the file; GPU
              delegates run float16).

            `bench/serving_peers.py` measures their speed on this machine.
        inputs: `"text"` or `"ids"`.
        pairs: serve text pairs (`text_a`, `text_b`), as for `export_saved_model`.
        label_names: class or tag names, as for `export_saved_model`.
        max_answer_length: longest answer of a span labeler, in wordpieces.
        null_score_threshold: a SQuAD 2.0 span labeler answers nothing (an empty answer,
            indices 0) when its null score beats the best span's by more than this (as
            `answers` does); None: always the best span.
        max_text_bytes: longer texts are cut to this many bytes before tokenization, at a
            UTF-8 character boundary (None: no limit); with `inputs="ids"`, unused.
        static_shape: True pads every row to `preprocessor.seq_length` (fixed tensor
            shapes); False pads each call to its longest text. None (default): False,
            unless the model converts only with fixed shapes (then True, with a warning).
        calibration_texts: with `quantize="int8"` (required there, unused otherwise):
            texts like those the app will serve, from which the activation scales are set
            (a few hundred are plenty; each is run once through the float model). Each item
            is what one call takes: a string for a one-text model; a `(text_a, text_b)`
            pair with `pairs=True`; for other inputs, a tuple in the order of the
            signature's text inputs or a dict keyed by them (a question answerer:
            `question`, `context`; multiple choice: `text`, `choices`, a list of strings).

    Returns:
        `path`.

    Raises:
        ValueError: bad arguments (`quantize="int8"` without `calibration_texts`, or
            calibration texts that do not match the signature's inputs; text in with a
            byte-level BPE preprocessor), or the converted graph holds an op outside the
            TFLite allowlist (named in the message).

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.models.classifier import BertClassifier
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
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
    model = _float32_model(model)
    task = serving_task(model, preprocessor, pairs, label_names, max_answer_length,
                        null_score_threshold)
    if preprocessor.tokenizer_kind == BYTE_PAIR and inputs == "text":
        # ModernBERT's NFC normalization adds tf.text's NormalizeUTF8, which has no TFLite
        # kernel either.
        blocking = (*BPE_TFLITE_BLOCKING_OPS, *(
            ["NormalizeUTF8"] if getattr(preprocessor.tokenizer, "normalization", None)
            else []))
        raise ValueError(
            "a byte-level BPE (RoBERTa) preprocessor cannot tokenize inside a .tflite file: "
            "its tokenizer needs TensorFlow ops that are neither TFLite builtins nor tf.text "
            f"TFLite ops ({', '.join(blocking)}). Export with inputs='ids' "
            "(token_ids, segment_ids, padding_mask in) and tokenize in the app, e.g. with "
            "Hugging Face tokenizers; or serve raw text with export_saved_model.")
    if task.default_prompt and inputs == "text":
        raise ValueError(
            f"{model.name!r} puts its default prompt {task.default_prompt!r} before each "
            "text, which a .tflite file cannot do (TFLite has no string ops): set the "
            "model's default_prompt_name to None to export texts as given, and put the "
            "prompt before each text in the app")
    calibration = _calibration_rows(task, quantize, calibration_texts)
    if preprocessor.tokenizer_kind == BYTE_PAIR:
        # Ids in: the tokenizer runs only in Python, to calibrate int8 on ids.
        tflite_preprocessor = preprocessor.with_options(max_text_bytes=max_text_bytes)
    else:
        tflite_preprocessor = preprocessor.with_options(tflite_compatible=True,
                                                        max_text_bytes=max_text_bytes)
    signature = "serving_default" if inputs == "text" else "predict_ids"

    def convert(static_shape):
        module, concrete = serving_module(model, tflite_preprocessor, task,
                                          signatures=(signature,), static_shape=static_shape,
                                          text_outputs=False)
        dataset = None
        if calibration is not None:
            dataset = (calibration if inputs == "text" else
                       _ids_rows(task, tflite_preprocessor, calibration, static_shape))
        content = _convert(module, concrete, signature, quantize, dataset)
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


def _calibration_rows(task, quantize, calibration_texts):
    """The calibration texts as the signature's inputs, one row (one call) each; None
    without int8 quantization."""
    if quantize != "int8":
        if calibration_texts is not None:
            raise ValueError(f"calibration_texts is used only with quantize='int8', not with "
                             f"quantize={quantize!r}")
        return None
    if calibration_texts is None or isinstance(calibration_texts, (str, bytes)):
        raise ValueError("quantize='int8' needs calibration_texts: a list of texts like "
                         "those the app will serve, to set the int8 activation scales")
    items = list(calibration_texts)
    if not items:
        raise ValueError("quantize='int8' got empty calibration_texts: give a list of texts "
                         "like those the app will serve, to set the int8 activation scales")
    names = task.text_inputs
    rows = []
    for number, item in enumerate(items):
        if isinstance(item, dict):
            missing = [name for name in names if name not in item]
            if missing:
                raise ValueError(f"calibration_texts[{number}] lacks {missing}; the model "
                                 f"takes {list(names)}")
            values = [item[name] for name in names]
        elif isinstance(item, (str, bytes)):
            values = [item]
        else:
            values = list(item)
        if len(values) != len(names):
            raise ValueError(f"calibration_texts[{number}] holds {len(values)} text(s); the "
                             f"model takes {len(names)} ({', '.join(names)}) per example")
        rows.append({name: np.array([_encoded(value)], dtype=object)
                     for name, value in zip(names, values, strict=True)})
    return rows


def _encoded(value):
    if isinstance(value, (list, tuple)):  # multiple choice: one row of choices
        return [_encoded(v) for v in value]
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _ids_rows(task, preprocessor, rows, static_shape):
    """The calibration rows as the ids signature's inputs."""
    ids_rows = []
    for row in rows:
        features, _ = task.encode(preprocessor, {name: tf.constant(value)
                                                 for name, value in row.items()},
                                  static_shape, with_offsets=False)
        ids_rows.append({name: value.numpy() for name, value in features.items()})
    return ids_rows


def _float32_model(model):
    """`model`, or a float32 copy of a task model or encoder whose layers compute in float16
    or bfloat16: the converter would keep those ops as TensorFlow ops, which no TFLite
    interpreter runs."""
    encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
    # The layers' policy: a reloaded BertEncoder reports "float32" for itself whatever it is.
    if not isinstance(encoder, BertEncoder) or \
            encoder.embeddings.dtype_policy.compute_dtype == "float32":
        return model
    config = model.get_config()
    if model is encoder:
        config["dtype"] = "float32"
    else:
        config["encoder"] = {**config["encoder"],
                             "config": {**config["encoder"]["config"], "dtype": "float32"}}
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        copy = type(model).from_config(config)
    finally:
        keras.config.set_dtype_policy(policy)
    copy.set_weights(model.get_weights())
    return copy


def _convert(module, concrete, signature, quantize, calibration=None):
    """The `.tflite` flatbuffer of one signature of a serving module; `calibration`: the
    signature's inputs, a list of dicts, with `quantize="int8"`."""
    with tempfile.TemporaryDirectory() as saved_model_dir:
        converter = _converter(module, concrete, signature, saved_model_dir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # tf.text's ops, resolved by its registrar
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantize != "int8":
            return converter.convert()
        return _quantize_int8(converter, calibration)


def _converter(module, concrete, signature, saved_model_dir):
    """A converter of `module`'s `signature`. Either way it reads a SavedModel, whose
    variables it freezes into constants. Given the function, it saves and reloads one
    itself; given a SavedModel folder, it loads it twice, then collects the whole process's
    garbage, which is slower (`python bench/tflite_conversion.py`). A function's signature
    is always named `serving_default`, so another name goes the folder's way."""
    if signature == "serving_default":
        return tf.lite.TFLiteConverter.from_concrete_functions([concrete[signature]], module)
    return _saved_model_converter(module, concrete, signature, saved_model_dir)


def _saved_model_converter(module, concrete, signature, saved_model_dir):
    """A converter of `module`'s `signature` saved into `saved_model_dir`."""
    tf.saved_model.save(module, saved_model_dir, signatures=concrete)
    return tf.lite.TFLiteConverter.from_saved_model(saved_model_dir, signature_keys=[signature])


def _quantize_int8(converter, calibration):
    """Calibrates the converter's model on `calibration` (run in TFLite's calibrator with
    tf.text's ops registered), then quantizes `INT8_OPS` to int8, leaving the rest float."""
    from tensorflow_text import tflite_registrar

    converter.representative_dataset = lambda: iter(calibration)
    tensorflow_internals.set_custom_op_registerers(converter,
                                                   tflite_registrar.SELECT_TFTEXT_OPS)
    # The converter quantizes every op it can; TFLite's quantizer (the one behind
    # tf.lite.experimental.QuantizationDebugger) can leave op types float.
    tensorflow_internals.calibrate_only(converter)
    with warnings.catch_warnings():  # the calibrator runs on tf.lite.Interpreter
        warnings.filterwarnings("ignore", "(?s).*tf.lite.Interpreter is deprecated")
        calibrated = converter.convert()
    float_ops = sorted(op for op in tflite_op_types(calibrated)  # builtins: upper case
                       if op.isupper() and op not in INT8_OPS)
    return tensorflow_internals.mlir_quantize(calibrated, denylisted_ops=float_ops)
