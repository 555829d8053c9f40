"""TFLite export: op set, LiteRT runs, parity with the SavedModel, quantized variants."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.export import export_saved_model, export_tflite
from keras_bert_core.export.op_allowlists import (
    TFLITE_CUSTOM_OPS,
    tflite_op_types,
    unsupported_tflite_ops,
)
from keras_bert_core.text.preprocessor import BertPreprocessor
from keras_bert_core.text.string_batches import cut_texts
from tests.export.helpers import (
    LABEL_NAMES,
    ROOT,
    SEQ_LENGTH,
    bag_of_words_model,
    varied_texts,
)

RUNNER = ROOT / "export" / "run_tflite.py"
VARIANTS = ("float32", "dynamic", "float16", "int8", "ids")


@pytest.fixture(scope="module")
def runner():
    """`export/run_tflite.py`, imported as a module."""
    if importlib.util.find_spec("ai_edge_litert") is None:
        pytest.skip("ai-edge-litert is not installed (pip install ai-edge-litert): no LiteRT "
                    "interpreter to run the .tflite files")
    spec = importlib.util.spec_from_file_location("run_tflite", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tflite_files(classifier, preprocessor, classifier_tflite, tmp_path_factory):
    """The classifier converted once per variant: text in (3 weight types) and ids in."""
    directory = tmp_path_factory.mktemp("tflite")
    files = {"float32": classifier_tflite}
    for variant in (v for v in VARIANTS if v not in files):
        quantize = variant if variant in ("dynamic", "float16", "int8") else None
        # int8 calibrates on texts other than those the agreement is checked on.
        calibration = varied_texts(100, seed=3) if variant == "int8" else None
        files[variant] = export_tflite(
            classifier, preprocessor, directory / f"{variant}.tflite", quantize=quantize,
            inputs="ids" if variant == "ids" else "text", label_names=LABEL_NAMES,
            calibration_texts=calibration)
    return files


@pytest.fixture(scope="module")
def interpreters(runner, tflite_files):
    return {variant: runner.load(str(path)) for variant, path in tflite_files.items()}


def _one_by_one(runner, interpreter, texts):
    """Probabilities from one invocation per text, as on a phone."""
    return np.concatenate([runner.run(interpreter, {"text": [text]})["probabilities"]
                           for text in texts])


def test_only_builtins_and_tf_text_custom_ops(tflite_files):
    for variant, path in tflite_files.items():
        op_types = tflite_op_types(path.read_bytes())
        assert unsupported_tflite_ops(op_types) == set(), variant
        assert not any(op.startswith("Flex") for op in op_types), variant
        assert "FULLY_CONNECTED" in op_types, variant
        # The tokenizer's tf.text ops, whichever the TFLite pipeline uses, and only with text.
        assert ("FastWordpieceTokenizeWithOffsets" in op_types) == (variant != "ids"), variant
        assert bool(op_types & TFLITE_CUSTOM_OPS) == (variant != "ids"), variant


def test_signatures(interpreters):
    outputs = ["label", "label_name", "logits", "probabilities"]
    assert interpreters["float32"].get_signature_list() == {
        "serving_default": {"inputs": ["text"], "outputs": outputs}}
    assert interpreters["ids"].get_signature_list() == {
        "predict_ids": {"inputs": ["padding_mask", "segment_ids", "token_ids"],
                        "outputs": outputs}}


def test_float32_matches_the_saved_model(preprocessor, classifier_signatures, interpreters,
                                         runner):
    texts = varied_texts(200)
    # The TFLite tokenizer folds compatibility characters; on these texts it must agree.
    tflite_preprocessor = BertPreprocessor(preprocessor.vocabulary, SEQ_LENGTH,
                                           tflite_compatible=True)
    np.testing.assert_array_equal(tflite_preprocessor(texts)["token_ids"],
                                  preprocessor(texts)["token_ids"])
    # Two requests: the export takes at most 128 rows at a time (its max_batch_size).
    served = np.concatenate([classifier_signatures["serving_default"](
        text=tf.constant(texts[start:start + 100]))["probabilities"] for start in (0, 100)])
    on_device = _one_by_one(runner, interpreters["float32"], texts)
    np.testing.assert_allclose(on_device, served, atol=1e-4)
    # A batch in one invocation (the interpreter resizes its input) gives the same.
    batch = runner.run(interpreters["float32"], {"text": texts[:16]})
    np.testing.assert_allclose(batch["probabilities"], on_device[:16], atol=1e-5)
    assert [n.decode() for n in batch["label_name"]] == [
        LABEL_NAMES[i] for i in batch["label"]]


def test_a_short_text_is_not_padded_to_seq_length(interpreters):
    # The width is dynamic: a call is padded to its longest text, not to seq_length.
    ids = interpreters["ids"].get_signature_runner()
    assert list(ids.get_input_details()["token_ids"]["shape_signature"]) == [-1, -1]
    short = {name: np.array([[2, 5, 3, 0, 0, 0, 0, 0]] if name == "token_ids" else
                            [[1, 1, 1, 0, 0, 0, 0, 0]] if name == "padding_mask" else
                            [[0] * 8], np.int32)
             for name in ("token_ids", "segment_ids", "padding_mask")}
    padded = {name: np.pad(value, [(0, 0), (0, SEQ_LENGTH - 8)])
              for name, value in short.items()}
    np.testing.assert_allclose(ids(**short)["probabilities"], ids(**padded)["probabilities"],
                               atol=1e-6)


def test_a_model_that_needs_fixed_shapes_is_padded_with_a_warning(
        runner, char_vocab_file, tmp_path):
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    inputs = {name: keras.Input([None], dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    # `[:, :, None]` converts to TFLite only on a static shape.
    real = keras.ops.cast(inputs["padding_mask"], "float32")[:, :, None]
    vectors = keras.layers.Embedding(len(preprocessor.vocabulary), 4)(inputs["token_ids"])
    model = keras.Model(inputs, keras.ops.sum(vectors * real, axis=1), name="new_axis")
    with pytest.warns(UserWarning, match="only with fixed shapes.*padded to seq_length 16"):
        path = export_tflite(model, preprocessor, tmp_path / "m.tflite")
    interpreter = runner.load(str(path))
    outputs = runner.run(interpreter, {"text": ["abc", "a b c d"]})["outputs"]
    np.testing.assert_allclose(outputs, model(preprocessor(["abc", "a b c d"])), atol=1e-5)
    with pytest.raises(ValueError, match=r"holds ops .*\['StridedSlice'\]"):
        export_tflite(model, preprocessor, tmp_path / "n.tflite", static_shape=False)
    assert not (tmp_path / "n.tflite").exists()


def test_ids_variant_matches_predict_ids(preprocessor, classifier_signatures, interpreters,
                                         runner):
    features = {name: value.numpy()
                for name, value in preprocessor(varied_texts(50, seed=7)).items()}
    served = classifier_signatures["predict_ids"](**features)
    on_device = runner.run(interpreters["ids"], features)
    np.testing.assert_allclose(on_device["probabilities"], served["probabilities"].numpy(),
                               atol=1e-4)
    short = runner.run(interpreters["ids"], {name: value[:1, :12]
                                             for name, value in features.items()})
    assert short["probabilities"].shape == (1, len(LABEL_NAMES))


def test_quantized_variants_agree_on_labels(interpreters, runner):
    texts = varied_texts(200)
    labels = _one_by_one(runner, interpreters["float32"], texts).argmax(-1)
    # The classifier learned the rule: the check compares varied answers, not a constant.
    counts = np.bincount(labels, minlength=len(LABEL_NAMES))
    assert (counts >= 20).all(), counts
    for variant in ("dynamic", "float16", "int8"):
        quantized = _one_by_one(runner, interpreters[variant], texts).argmax(-1)
        assert (quantized == labels).mean() >= 0.99, variant


def test_int8_quantizes_activations_of_the_matrix_products(tflite_files):
    from tensorflow.lite.python import schema_py_generated as schema

    def int8_fully_connected_inputs(path):
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(path.read_bytes(), 0))
        graph = model.subgraphs[0]
        fully_connected = [index for index, code in enumerate(model.operatorCodes)
                           if max(code.builtinCode, code.deprecatedBuiltinCode)
                           == schema.BuiltinOperator.FULLY_CONNECTED]
        return {graph.tensors[op.inputs[0]].type == schema.TensorType.INT8
                for op in graph.operators if op.opcodeIndex in fully_connected}

    # Full-integer: int8 inputs (fixed scales); dynamic-range: float inputs.
    assert int8_fully_connected_inputs(tflite_files["int8"]) == {True}
    assert int8_fully_connected_inputs(tflite_files["dynamic"]) == {False}


def test_quantization_shrinks_the_file(tflite_files):
    size = {variant: path.stat().st_size for variant, path in tflite_files.items()}
    assert size["dynamic"] < 0.5 * size["float32"]
    assert size["int8"] < 0.5 * size["float32"]
    assert size["float16"] < 0.7 * size["float32"]


def test_bad_inputs_give_defined_outputs(interpreters, runner):
    texts = ["", "   ", "spam, eggs and ham " * 55_000, b"caf\xc3", b"\xff\xfe\xfa broken"]
    probabilities = runner.run(interpreters["float32"], {"text": texts})["probabilities"]
    assert probabilities.shape == (len(texts), 3)
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    empty = runner.run(interpreters["float32"], {"text": []})
    assert empty["probabilities"].shape == (0, 3) and empty["label"].shape == (0,)


def test_runner_command_line(tflite_files):
    # An argument's invalid UTF-8 goes in as its bytes (dropped by the tokenizer), as
    # `run` takes them; it was a UnicodeEncodeError of the surrogates Python reads them as.
    result = subprocess.run(
        [sys.executable, str(RUNNER), str(tflite_files["float32"]), "Is it 42?", "Hello!",
         os.fsdecode(b"Is it \xff42?")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.strip().splitlines()]
    assert len(lines) == 3
    np.testing.assert_allclose(lines[2]["probabilities"], lines[0]["probabilities"], atol=1e-6)
    assert all(line["label_name"][0] in LABEL_NAMES for line in lines)
    assert all(abs(sum(line["probabilities"][0]) - 1) < 1e-5 for line in lines)


def test_runner_refuses_inputs_of_other_shapes(interpreters, runner, tflite_files,
                                               capsys):
    # The file's graph would pair one row with every row of another input (its checks are
    # not in TFLite), or fail inside LiteRT: the runner names the inputs instead.
    ids = {"token_ids": [[101, 102], [101, 102]], "segment_ids": [[0, 0]],
           "padding_mask": [[1, 1], [1, 1]]}
    with pytest.raises(ValueError, match=r"inputs must hold the same number of rows .*"
                                         r"'segment_ids': 1"):
        runner.run(interpreters["ids"], ids)
    with pytest.raises(ValueError, match=re.escape("input 'text' takes shape [batch]; got "
                                                   "[1, 2]")):
        runner.run(interpreters["float32"], {"text": [["a", "b"]]})
    # Was "XNNPack delegate failed to reshape runtime" from LiteRT.
    with pytest.raises(ValueError, match=re.escape("ids inputs must have the same shape; got "
                                                   "{'padding_mask': [1, 3], 'segment_ids': "
                                                   "[1, 2], 'token_ids': [1, 3]}")):
        runner.run(interpreters["ids"], {"token_ids": [[101, 7592, 102]], "segment_ids":
                                         [[0, 0]], "padding_mask": [[1, 1, 1]]})
    with pytest.raises(SystemExit):  # a parser error, not a ValueError traceback
        runner.main([str(tflite_files["ids"]), "--input", "token_ids=101,x"])
    assert "expected comma-separated integers" in capsys.readouterr().err


def test_bad_arguments_name_the_problem(classifier, preprocessor, tmp_path):
    with pytest.raises(ValueError, match="quantize must be one of"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", quantize="int4")
    with pytest.raises(ValueError, match="inputs must be one of"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", inputs="tokens")
    with pytest.raises(ValueError, match="max_text_bytes must be an integer of at least 4"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", max_text_bytes=3)
    with pytest.raises(ValueError, match="quantize='int8' needs calibration_texts"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", quantize="int8")
    with pytest.raises(ValueError, match="quantize='int8' got empty calibration_texts"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", quantize="int8",
                      calibration_texts=[])
    with pytest.raises(ValueError, match=r"calibration_texts\[1\] holds 2 text\(s\); the "
                                         r"model takes 1 \(text\)"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", quantize="int8",
                      calibration_texts=["fine", ("a", "b")])
    with pytest.raises(ValueError, match="calibration_texts is used only with "
                                         "quantize='int8'"):
        export_tflite(classifier, preprocessor, tmp_path / "m.tflite", quantize="dynamic",
                      calibration_texts=["fine"])
    assert not (tmp_path / "m.tflite").exists()


def test_texts_are_cut_as_the_saved_model_cuts_them(runner, char_vocab_file, tmp_path):
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    model = bag_of_words_model(len(preprocessor.vocabulary))
    tflite = runner.load(str(export_tflite(model, preprocessor, tmp_path / "m.tflite",
                                           max_text_bytes=8)))
    saved_model = tf.saved_model.load(export_saved_model(
        model, preprocessor, tmp_path / "sm", max_text_bytes=8, warmup=False))
    # Over-long ASCII, and characters of 2, 3 and 4 bytes cut at byte 8 (the vocabulary has
    # ASCII only: a kept one is [UNK], a cut one is dropped).
    texts = ["abc defghij klm" * 1000, "abcdefg€xyz", "abcdé€x", "ab😀 😀 x", "a,é 😀 x"]
    cut = [t.decode() for t in cut_texts(tf.constant(texts), 8).numpy()]
    assert cut == ["abc defg", "abcdefg", "abcdé", "ab😀 ", "a,é "]
    outputs = runner.run(tflite, {"text": texts})["outputs"]
    np.testing.assert_allclose(outputs, runner.run(tflite, {"text": cut})["outputs"], atol=1e-6)
    np.testing.assert_allclose(outputs, saved_model.signatures["serving_default"](
        text=tf.constant(texts))["outputs"].numpy(), atol=1e-5)
    np.testing.assert_allclose(outputs, model(preprocessor(cut)).numpy(), atol=1e-5)
    # The cut changed every text's ids: the whole texts give other outputs.
    whole = model(preprocessor(texts)).numpy()
    assert (np.abs(outputs - whole).max(-1) > 1e-4).all()


def test_a_mixed_precision_model_converts_from_a_float32_copy(runner, char_vocab_file,
                                                              tmp_path):
    """A model trained under "mixed_float16" (`kbc finetune --mixed-precision float16`) kept
    its float16 ops in the converted graph, and the export failed naming MatMul, AddV2...
    as ops TFLite lacks."""
    import keras_bert_core as kbc
    from tests.helpers import global_dtype_policy

    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    with global_dtype_policy("mixed_float16"):
        model = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
            "tiny", vocab_size=len(preprocessor.vocabulary), max_position_embeddings=16,
            num_layers=1)), num_classes=2, preprocessor=preprocessor)
    texts = ["a good film", "a bad film!"]
    path = export_tflite(model, preprocessor, tmp_path / "mixed.tflite")
    probabilities = runner.run(runner.load(str(path)), {"text": texts})["probabilities"]
    np.testing.assert_allclose(probabilities, keras.ops.softmax(model.predict(
        texts, verbose=0)), atol=2e-3)
    assert model.encoder.embeddings.compute_dtype == "float16"  # the model is left as it was
