"""SavedModel export: signatures, a keras-free load in a fresh process, parity, TF Serving."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.export import export_saved_model, read_warmup_requests, saved_model_op_types
from keras_bert_core.export.op_allowlists import unsupported_tf_serving_ops
from keras_bert_core.export.warmup import WARMUP_FILE
from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import (
    LABEL_NAMES,
    SEQ_LENGTH,
    bag_of_words_model,
    keras_probabilities,
    varied_texts,
)

# Loads and serves an export as TF Serving would: TensorFlow plus tf.text's kernels, no
# Keras and no keras_bert_core (blocked, so any attempt to import them fails). tf.text's
# kernels are loaded from its op libraries: its Python package imports Keras (tf.keras).
# Arguments: a JSON file of texts, then each export's directory and the .npz file for its
# outputs (one process serves several exports).
_SERVE_IN_FRESH_PROCESS = """
import glob, importlib.util, json, os, sys
import numpy as np
for name in ("keras", "tf_keras", "keras_bert_core"):
    sys.modules[name] = None
import tensorflow as tf
text_package = importlib.util.find_spec("tensorflow_text").submodule_search_locations[0]
for library in sorted(glob.glob(os.path.join(text_package, "python", "ops", "_*.so"))):
    tf.load_op_library(library)

texts_file, *exports = sys.argv[1:]
texts = tf.constant(json.load(open(texts_file)))
for export_dir, outputs_file in zip(exports[::2], exports[1::2], strict=True):
    model = tf.saved_model.load(export_dir)
    served = model.signatures["serving_default"](text=texts)
    features = model.signatures["tokenize"](text=texts)
    from_ids = model.signatures["predict_ids"](**features)
    np.savez(outputs_file, **{name: value.numpy() for name, value in served.items()},
             ids_probabilities=from_ids["probabilities"].numpy(),
             token_ids=features["token_ids"].numpy())
print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None
                        and name.split(".")[0] in ("keras", "tf_keras", "keras_bert_core",
                                                   "tensorflow_text"))))
"""


def _serve(signature, **inputs):
    return {name: value.numpy() for name, value in
            signature(**{k: tf.constant(v, tf.string) for k, v in inputs.items()}).items()}


def test_fresh_process_without_keras_serves_what_keras_computes(
        classifier, preprocessor, classifier_export, tmp_path):
    texts = varied_texts(40, seed=3)
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    result = subprocess.run(
        [sys.executable, "-c", _SERVE_IN_FRESH_PROCESS, str(tmp_path / "texts.json"),
         classifier_export, str(tmp_path / "outputs.npz")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []

    served = np.load(tmp_path / "outputs.npz", allow_pickle=True)
    expected = keras_probabilities(classifier, preprocessor, texts)
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    np.testing.assert_allclose(served["ids_probabilities"], expected, atol=1e-5)
    np.testing.assert_array_equal(served["label"], expected.argmax(-1))
    assert [n.decode() for n in served["label_name"]] == [
        LABEL_NAMES[i] for i in expected.argmax(-1)]
    # The model learned the rule a little: not every text gets the same label.
    assert len(set(served["label"].tolist())) > 1


def test_saved_model_cli_lists_the_signatures(classifier_export):
    cli = pathlib.Path(sys.executable).parent / "saved_model_cli"
    if not cli.exists():
        pytest.skip(f"saved_model_cli is not installed next to {sys.executable}")
    result = subprocess.run([str(cli), "show", "--all", "--dir", classifier_export],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for signature in ("serving_default", "predict_ids", "tokenize"):
        assert f"signature_def['{signature}']" in result.stdout
    assert "inputs['text'] tensor_info:\n        dtype: DT_STRING" in result.stdout
    assert "inputs['token_ids'] tensor_info:\n        dtype: DT_INT32" in result.stdout


def test_graph_holds_only_tf_serving_ops(classifier_export):
    op_types = saved_model_op_types(classifier_export)
    # The tokenizer's ops live in the function library: listing them proves the recursion.
    assert {"FastWordpieceTokenizeWithOffsets", "BatchMatMulV2", "Softmax"} <= op_types
    assert unsupported_tf_serving_ops(op_types) == set()


def test_vocabulary_is_an_asset_and_no_absolute_path_is_stored(char_vocab_file, tmp_path):
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    model = bag_of_words_model(len(preprocessor.vocabulary))
    export_dir = export_saved_model(model, preprocessor, tmp_path / "export", warmup=False)
    assets = pathlib.Path(export_dir) / "assets"
    assert (assets / "vocab.txt").read_bytes() == char_vocab_file.read_bytes()
    loaded = tf.saved_model.load(export_dir)
    assert pathlib.Path(loaded.vocab_file.asset_path.numpy().decode()) == assets / "vocab.txt"
    stored = [pathlib.Path(export_dir) / "saved_model.pb",
              *(pathlib.Path(export_dir) / "variables").iterdir()]
    for path in stored:
        assert str(tmp_path).encode() not in path.read_bytes(), path
    # A model that is not a package model serves its outputs as they are.
    outputs = loaded.signatures["serving_default"](text=tf.constant(["abc", "a b c d"]))
    assert outputs["outputs"].shape == (2, 2)


def test_batches_pad_to_their_longest_text_rounded_to_8(classifier_signatures):
    tokenize = classifier_signatures["tokenize"]
    widths = {}
    for texts in (["Hi."], ["Hi.", "A sentence of exactly nine words, more or less."],
                  ["word " * 500]):
        features = tokenize(text=tf.constant(texts))
        widths[len(texts[-1])] = features["token_ids"].shape[1]
        assert {v.dtype for v in features.values()} == {tf.int32}
    assert list(widths.values()) == [8, 16, SEQ_LENGTH]


def test_tf_serving_layout_and_versions(char_vocab_file, tmp_path):
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    model = bag_of_words_model(len(preprocessor.vocabulary))
    export_dir = export_saved_model(model, preprocessor, tmp_path, name="chars", version=2)
    assert pathlib.Path(export_dir) == tmp_path / "chars" / "2"
    assert {p.name for p in (tmp_path / "chars" / "2").iterdir()} >= {
        "saved_model.pb", "variables", "assets", "assets.extra"}
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_saved_model(model, preprocessor, tmp_path, name="chars", version=2)
    export_saved_model(model, preprocessor, tmp_path, name="chars", version=2, warmup=False,
                       overwrite=True)
    assert not (tmp_path / "chars" / "2" / "assets.extra").exists()
    with pytest.raises(ValueError, match="version must be a positive integer"):
        export_saved_model(model, preprocessor, tmp_path, name="chars", version=0)


def test_warmup_requests_replay_against_the_signature(classifier_export,
                                                      classifier_signatures):
    path = os.path.join(classifier_export, WARMUP_FILE)
    requests = read_warmup_requests(path)
    assert [r.model_spec.signature_name for r in requests] == ["serving_default"] * 2
    assert [r.model_spec.name for r in requests] == ["classifier"] * 2
    signature = classifier_signatures["serving_default"]
    for request in requests:
        assert set(request.inputs) == {"text"}
        texts = tf.make_ndarray(request.inputs["text"])
        outputs = signature(text=tf.constant(texts))
        assert outputs["probabilities"].shape == (len(texts), len(LABEL_NAMES))


def test_bad_inputs_give_defined_outputs(classifier_signatures):
    signature = classifier_signatures["serving_default"]
    cases = {
        "empty strings": ["", "   ", "\t\n"],
        "megabyte string": ["spam, eggs and ham " * 55_000],
        "invalid utf-8": [b"caf\xc3", b"\xff\xfe\xfa broken", b"ok \xe2\x82 text"],
    }
    for case, texts in cases.items():
        outputs = _serve(signature, text=texts)
        probabilities = outputs["probabilities"]
        assert probabilities.shape == (len(texts), 3), case
        assert np.isfinite(probabilities).all(), case
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5, err_msg=case)
    empty = _serve(signature, text=np.array([], dtype=object))
    assert empty["probabilities"].shape == (0, 3)
    assert empty["label"].shape == empty["label_name"].shape == (0,)


def test_bad_arguments_name_the_problem(classifier, preprocessor, vocab_file, tmp_path):
    with pytest.raises(ValueError, match="label_names has 2 names but the model has "
                                         "num_classes=3"):
        export_saved_model(classifier, preprocessor, tmp_path, label_names=["a", "b"])
    with pytest.raises(TypeError, match="preprocessor must be a keras_bert_core "
                                        "BertPreprocessor"):
        export_saved_model(classifier, "vocab.txt", tmp_path)
    with pytest.raises(ValueError, match="label_names is for classifiers"):
        export_saved_model(classifier.encoder, preprocessor, tmp_path, label_names=["a"])
    long_preprocessor = BertPreprocessor(str(vocab_file), seq_length=SEQ_LENGTH + 1)
    with pytest.raises(ValueError, match="seq_length 65 exceeds the model's "
                                         "max_position_embeddings 64"):
        export_saved_model(classifier, long_preprocessor, tmp_path)
