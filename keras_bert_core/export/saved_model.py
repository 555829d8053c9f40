"""SavedModel export: one directory that TF Serving loads and that takes raw text."""

import os
import tempfile
import warnings

import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert_core.export.limits import (
    MAX_BATCH_SIZE,
    MAX_TEXT_BYTES,
    check_limits,
    check_request_shapes,
    limit_batch,
)
from keras_bert_core.export.op_allowlists import graph_op_types, unsupported_tf_serving_ops
from keras_bert_core.export.warmup import write_warmup_requests
from keras_bert_core.files import replaced_when_complete
from keras_bert_core.tasks.serving import cut_padding
from keras_bert_core.tasks.serving_dispatch import serving_task
from keras_bert_core.text.string_batches import cut_texts
from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG, write_vocabulary_files

SIGNATURES = ("serving_default", "predict_ids", "tokenize")


def serving_module(model, preprocessor, task, signatures=SIGNATURES, static_shape=False,
                   text_outputs=True, max_batch_size=None, max_text_bytes=None):
    """A `tf.Module` whose `tf.function`s serve `model` behind `preprocessor`.

    Args:
        model: the Keras model.
        preprocessor: a `BertPreprocessor`.
        task: the `ServingTask` that reads the texts and shapes the answers.
        signatures: which functions to build, among `SIGNATURES`: `serving_default` (raw
            text in, answers out), `predict_ids` (encoder inputs in, answers out) and
            `tokenize` (raw text in, encoder inputs out), and the task's
            `prompt_signatures` (raw text in, the prompt put before it, answers out).
        static_shape: pad to `preprocessor.seq_length` (for TFLite delegates that need
            fixed shapes) instead of to the longest sequence of the batch, rounded up to
            a multiple of 8.
        text_outputs: also answer what cuts the text (answer text, words); TFLite
            cannot.
        max_batch_size: requests with more rows fail (None: no limit).
        max_text_bytes: longer texts are cut to this many bytes before tokenization, at a
            UTF-8 character boundary (None: no limit).

    Returns:
        `(module, concrete_functions)`, the latter a dict keyed by signature name.
    """

    def answer(features):
        if not static_shape:
            if task.pooled:
                features = cut_padding(features)
            # An empty batch packs to width 0, but the encoder reads position 0 ([CLS]).
            features = {name: tf.pad(ids, [[0, 0]] * (ids.shape.rank - 1)
                                     + [[0, tf.maximum(1 - tf.shape(ids)[-1], 0)]])
                        for name, ids in features.items()}
        model_outputs, features = task.run_model(model, features)
        return features, task.outputs(model_outputs, features)

    def limited(texts):
        texts = limit_batch(check_request_shapes(texts), max_batch_size)
        return {name: cut_texts(value, max_text_bytes) for name, value in texts.items()}

    def predict_ids(features):
        return answer(limit_batch(check_request_shapes(features), max_batch_size))[1]

    def encode(texts):
        return task.encode(preprocessor, texts, static_shape)

    if "serving_default" in signatures and "tokenize" in signatures:
        # Both text signatures call one traced tokenizer: the SavedModel holds its graph
        # (the largest part of a small model's, a byte-level BPE tokenizer's especially)
        # once, and traces, loads and warms up faster.
        encode = tf.function(encode, autograph=False)

    def prompted(texts, prompt):
        if not prompt:
            return texts
        return {name: tf.strings.join([prompt, value]) for name, value in texts.items()}

    def serving(prompt):
        def serve(texts):
            texts = prompted(limited(texts), prompt)
            features, offsets = encode(texts)
            features, outputs = answer(features)
            outputs.update(task.offset_outputs(outputs, features, offsets))
            if text_outputs:
                outputs.update(task.text_outputs(outputs, features, texts, offsets))
            return outputs

        return serve

    def tokenize(texts):
        return encode(prompted(limited(texts), task.default_prompt))[0]

    seq_length = preprocessor.seq_length if static_shape else None
    functions = {"serving_default": (serving(task.default_prompt), task.text_specs()),
                 "predict_ids": (predict_ids, task.ids_specs(seq_length)),
                 "tokenize": (tokenize, task.text_specs()),
                 **{name: (serving(prompt), task.text_specs())
                    for name, prompt in task.prompt_signatures.items()}}
    concrete = {name: tf.function(functions[name][0], input_signature=[functions[name][1]],
                                  autograph=False).get_concrete_function()
                for name in signatures}
    # Only the signatures are saved (saving `tf.function` attributes would trace them again).
    module = tf.Module()
    # Track the variables the functions read on the module itself, not through the Keras
    # objects: the SavedModel then holds no Keras object, and the TFLite converter freezes
    # them (it leaves variables reached only through Keras layers as resource variables).
    variables = {id(v): v for function in concrete.values() for v in function.variables}
    module.model_variables = list(variables.values())
    # Resources the tokenizer's ops read (BPE's merge table, a SentencePiece model): the
    # SavedModel must hold them too, when a signature takes text.
    resources = [x for x in tf.train.TrackableView(preprocessor).descendants()
                 if isinstance(x, tf.saved_model.experimental.TrackableResource)]
    if resources and set(signatures) & {"serving_default", "tokenize"}:
        module.tokenizer_resources = resources
    return module, concrete


def attach_vocabulary_assets(module, preprocessor, directory):
    """Writes the preprocessor's vocabulary files into `directory` and tracks them on
    `module` as SavedModel assets (copied to `assets/`, referenced by relative paths):
    `vocab_file` (`vocab.txt`, `vocab.json`, `spiece.model` or `sentencepiece.bpe.model`),
    `merges_file` (BPE's `merges.txt`) and `tokenizer_config` (casing options).
    `BertPreprocessor` on the export's `assets/` folder rebuilds the same tokenizer."""
    paths = write_vocabulary_files(preprocessor.tokenizer, directory)
    files = list(paths.values())
    module.vocab_file = tf.saved_model.Asset(files[0])
    if "merges.txt" in paths:
        module.merges_file = tf.saved_model.Asset(paths["merges.txt"])
    module.tokenizer_config = tf.saved_model.Asset(paths[TOKENIZER_CONFIG])


def export_saved_model(model, preprocessor, path, name=None, version=1, *, pairs=False,
                       label_names=None, max_answer_length=30,
                       null_score_threshold=None, max_batch_size=MAX_BATCH_SIZE,
                       max_text_bytes=MAX_TEXT_BYTES, warmup=True, overwrite=False):
    """Writes a SavedModel that serves `model` from raw text, tokenizer inside.

    Signatures (see `export/README.md` for every input and output):

    - `serving_default`: raw strings in (`text`; `text_a` and `text_b` with `pairs=True`;
      `question` and `context` for a span labeler; `text` and `choices` for multiple
      choice), the task's answers out: probabilities, `label` (and `label_name`) for a
      classifier; the best span and its `answer` text for a span labeler; `tags` per
      wordpiece and per word for a token classifier; `embedding` for a `BertEmbedder`
      (its vectors, normalized where it normalizes, its default prompt before the
      texts); `pooled_output` and `mean_embedding` for a bare encoder.
    - an embedder with prompts: one more signature per prompt name (e.g. `query`,
      `document`), as `serving_default` with that prompt before the texts.
    - `predict_ids`: int32 `token_ids`, `segment_ids`, `padding_mask` in, the same answers
      out but those that need the text.
    - `tokenize`: raw strings in, the int32 encoder inputs out (an embedder's default
      prompt before the texts).

    Each batch is padded to its longest sequence, rounded up to a multiple of 8, at most
    `preprocessor.seq_length`; a classifier, embedder or encoder, whose answers pool the
    sequence, runs only the columns up to the longest sequence. The tokenizer's files
    travel as assets, with its casing in `assets/tokenizer_config.json`: `assets/vocab.txt`
    (WordPiece), `assets/vocab.json` and `assets/merges.txt` (byte-level BPE, RoBERTa) or
    `assets/spiece.model` (SentencePiece, ALBERT) or `assets/sentencepiece.bpe.model`
    (XLM-RoBERTa); the export holds no absolute path. The
    graph holds TensorFlow core ops and the tf.text ops that TF Serving links (a warning
    names any other).

    The SavedModel is written beside its destination and moved there only when complete:
    TF Serving, watching `<path>/<name>`, never loads a half-written version, and a failed
    export leaves the previous one in place.

    Args:
        model: a task model (`BertClassifier`, `BertSpanLabeler`, `BertTokenClassifier`,
            `BertMultipleChoice`), a `BertEncoder`, or any Keras model on the encoder
            inputs (its outputs are served as they are).
        preprocessor: the `BertPreprocessor` the model was trained with (any tokenizer:
            WordPiece, byte-level BPE, SentencePiece).
        path: where to write. With `name`, the TF Serving layout
            `<path>/<name>/<version>/`; without, `path` itself is the SavedModel directory.
        name: the model name TF Serving serves it under: one folder name, no path.
        version: the version number (a positive integer), TF Serving's subdirectory.
        pairs: serve text pairs (`text_a`, `text_b`) to a classifier, encoder or other
            model.
        label_names: class names of a classifier, or tag names of a token classifier.
        max_answer_length: longest answer of a span labeler, in wordpieces.
        null_score_threshold: a SQuAD 2.0 span labeler answers nothing (an empty answer,
            indices 0) when its null score beats the best span's by more than this (as
            `answers` does); None: always the best span.
        max_batch_size: the most rows one request may hold: a larger request fails with
            InvalidArgument naming the limit (None: no limit). TF Serving's batching must
            not merge requests past it (see `export/batching.config`).
        max_text_bytes: longer texts are cut to this many bytes, at a UTF-8 character
            boundary, before tokenization, and answered (None: no cut). The tokenizer's
            memory and time grow with a text's bytes, while only the first
            `preprocessor.seq_length` wordpieces reach the model.
        warmup: write `assets.extra/tf_serving_warmup_requests` (needs
            tensorflow-serving-api; skipped with a warning without it).
        overwrite: replace an existing SavedModel at the destination.

    Returns:
        The SavedModel directory.

    Raises:
        ValueError: bad arguments (a `name` that is not one folder name among them).
        FileExistsError: the destination holds a SavedModel (and not `overwrite`), or is
            something else that is not an empty folder.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.models.classifier import BertClassifier
    >>> from keras_bert_core.text.preprocessor import BertPreprocessor
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "."]
    >>> pre = BertPreprocessor(vocab, seq_length=16)
    >>> model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=len(vocab), max_position_embeddings=16)), num_classes=2)
    >>> path = export_saved_model(model, pre, tempfile.mkdtemp(), name="sentiment",
    ...                           label_names=["negative", "positive"], warmup=False)
    >>> path.endswith(os.path.join("sentiment", "1"))
    True
    >>> serve = tf.saved_model.load(path).signatures["serving_default"]
    >>> serve(text=tf.constant(["Good film.", "Bad!"]))["label_name"].shape
    TensorShape([2])
    """
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}")
    if name is not None:
        check_model_name(name)
    check_limits(max_batch_size, max_text_bytes)
    task = serving_task(model, preprocessor, pairs, label_names, max_answer_length,
                        null_score_threshold)
    export_dir = os.fspath(path) if name is None else os.path.join(path, name, str(version))
    _check_destination(export_dir, overwrite)

    module, signatures = serving_module(model, preprocessor, task,
                                        SIGNATURES + tuple(task.prompt_signatures),
                                        max_batch_size=max_batch_size,
                                        max_text_bytes=max_text_bytes)
    os.makedirs(os.path.dirname(os.path.abspath(export_dir)), exist_ok=True)
    with replaced_when_complete(export_dir) as partial, tempfile.TemporaryDirectory() as tmp:
        attach_vocabulary_assets(module, preprocessor, tmp)
        tf.saved_model.save(module, partial, signatures=signatures)
        if warmup:
            batch_sizes = sorted({1, min(8, max_batch_size or 8)})
            requests = [task.example_inputs(batch_size) for batch_size in batch_sizes]
            try:
                write_warmup_requests(partial, requests, model_name=name or "model")
            except ImportError as e:
                warnings.warn(f"No warmup requests written: {e}", stacklevel=2)
        unsupported = unsupported_tf_serving_ops(saved_model_op_types(partial))
    if unsupported:
        warnings.warn(f"{export_dir} holds ops TF Serving may not link: {sorted(unsupported)}",
                      stacklevel=2)
    return export_dir


def check_model_name(name):
    """Raises ValueError unless `name` is one folder name: a TF Serving model name must not
    lead the export out of its base folder.

    Example:
    >>> check_model_name("classifier")
    >>> check_model_name("../classifier")
    Traceback (most recent call last):
    ...
    ValueError: the model name must be one folder name (no '/', '.' or '..'), got '../classifier'
    """
    separators = [sep for sep in (os.sep, os.altsep, "/") if sep]
    if (not isinstance(name, str) or name in ("", ".", "..")
            or any(sep in name for sep in separators)):
        raise ValueError(f"the model name must be one folder name (no '/', '.' or '..'), "
                         f"got {name!r}")


def _check_destination(export_dir, overwrite):
    """Refuses to replace a SavedModel unless `overwrite`, and anything else but an empty
    folder (never delete what is not an export)."""
    if not os.path.lexists(export_dir):
        return
    if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
        if not overwrite:
            raise FileExistsError(f"{export_dir} already holds a SavedModel; pass "
                                  "overwrite=True to replace it, or a new version")
    elif not os.path.isdir(export_dir) or os.listdir(export_dir):
        raise FileExistsError(f"{export_dir} exists and is not a SavedModel; choose a new "
                              "path")


def load_saved_model(export_dir):
    """Loads a SavedModel from `export_saved_model` in any process.

    The graph holds tf.text ops (the tokenizer), which TensorFlow knows only once
    `tensorflow_text` is imported: this imports it first.

    Raises:
        ValueError: `export_dir` is not a complete SavedModel (a truncated `saved_model.pb`,
            missing or truncated variables), naming the problem.

    Example:
    >>> import tempfile
    >>> module = tf.Module()
    >>> module.double = tf.function(lambda x: 2 * x, input_signature=[tf.TensorSpec([None])])
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(module, path)
    >>> load_saved_model(path).double(tf.constant([1.0])).numpy().tolist()
    [2.0]
    """
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    try:
        return tf.saved_model.load(os.fspath(export_dir))
    except (OSError, IndexError, DecodeError, tf.errors.OpError) as e:
        reason = (getattr(e, "message", None) or str(e)).splitlines()[0]
        raise ValueError(f"{export_dir} is not a complete SavedModel ({reason})") from None


def saved_model_op_types(export_dir):
    """The op types of a SavedModel's graphs, the functions they call included.

    Example:
    >>> import tempfile
    >>> module = tf.Module()
    >>> module.double = tf.function(lambda x: 2 * x, input_signature=[tf.TensorSpec([None])])
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(module, path)
    >>> "Mul" in saved_model_op_types(path)
    True
    """
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return set().union(*(graph_op_types(meta.graph_def) for meta in saved_model.meta_graphs))
