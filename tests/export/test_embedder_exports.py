"""A `BertEmbedder` exported: SavedModel signatures (raw text -> vectors, one per prompt)
within TF Serving's ops, and a `.tflite` file whose vectors equal the SavedModel's."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.export import (
    export_saved_model,
    export_tflite,
    load_saved_model,
    saved_model_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "car", "fast",
         "slow", "query", ":", "the", "road", "is"]
TEXTS = ["a red car", "the blue car is slow", "fast", "a car on the road is fast"]


@pytest.fixture(scope="module")
def embedder():
    encoder = kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=len(VOCAB), max_position_embeddings=32, num_layers=1,
        hidden_size=32, num_heads=2, intermediate_size=64))
    return kbc.BertEmbedder(encoder, dense_layers=[8], prompts={"query": "query : "},
                            preprocessor=kbc.BertPreprocessor(VOCAB, seq_length=16))


@pytest.fixture(scope="module")
def saved_model(embedder, tmp_path_factory):
    path = export_saved_model(embedder, embedder.preprocessor,
                              tmp_path_factory.mktemp("export") / "embedder", warmup=False)
    return path, load_saved_model(path)


def test_saved_model_serves_vectors_and_a_signature_per_prompt(embedder, saved_model):
    path, loaded = saved_model
    assert sorted(loaded.signatures) == ["predict_ids", "query", "serving_default", "tokenize"]
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["embedding"].numpy()
    assert served.shape == (4, 8) and served.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(served, embedder.predict(TEXTS, verbose=0), atol=1e-5)
    queries = loaded.signatures["query"](text=tf.constant(TEXTS))["embedding"].numpy()
    np.testing.assert_allclose(queries, embedder.predict(TEXTS, prompt_name="query",
                                                         verbose=0), atol=1e-5)
    assert unsupported_tf_serving_ops(saved_model_op_types(path)) == set()


def test_vectors_come_from_the_real_columns_alone(embedder, saved_model):
    # `tokenize` pads to a multiple of 8 as documented; the vectors skip those columns
    # (cut_padding) and equal Keras's, for a batch of one short text and an empty batch.
    signatures = saved_model[1].signatures
    assert signatures["tokenize"](text=tf.constant(["fast"]))["token_ids"].shape == (1, 8)
    served = signatures["serving_default"](text=tf.constant(["fast"]))["embedding"].numpy()
    np.testing.assert_allclose(served, embedder.predict(["fast"], verbose=0), atol=1e-5)
    empty = signatures["serving_default"](text=tf.constant([], tf.string))["embedding"]
    assert empty.shape == (0, 8)


# As TF Serving's model server loads the SavedModel: a TF1 Session, grappler on, TensorFlow's
# own choice of kernels (tests/conftest.py turns oneDNN off in the test processes).
SERVED_OPS = """
import json, sys
import tensorflow as tf
import tensorflow_text  # its ops, which a TF Serving build links in

tf1 = tf.compat.v1
with tf.Graph().as_default(), tf1.Session() as session:
    meta = tf1.saved_model.loader.load(session, ["serve"], sys.argv[1])
    signature = meta.signature_def["serving_default"]
    metadata = tf1.RunMetadata()
    session.run(signature.outputs["embedding"].name,
                {signature.inputs["text"].name: [t.encode() for t in json.loads(sys.argv[2])]},
                options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE),
                run_metadata=metadata)
print(json.dumps(sorted({node.timeline_label.split(" = ", 1)[-1].split("(")[0]
                         for device in metadata.step_stats.dev_stats
                         for node in device.node_stats})))
"""


def test_served_as_tf_serving_runs_it_gelu_fuses_into_the_matmul(saved_model):
    # With oneDNN kernels the feed-forward's GELU runs inside the matmul's kernel (no Erf op).
    result = subprocess.run([sys.executable, "-c", SERVED_OPS, str(saved_model[0]),
                             json.dumps(TEXTS)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    ran = json.loads(result.stdout.strip().splitlines()[-1])
    if not any(op.startswith("_Mkl") for op in ran):
        pytest.skip("TensorFlow runs without oneDNN here: no fused GELU kernel to check")
    assert "Erf" not in ran and "Erfc" not in ran, ran


def test_tflite_vectors_equal_the_saved_models(embedder, saved_model, tmp_path):
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not "
                                 "installed: the .tflite file is not run")
    from tensorflow_text import tflite_registrar

    served = saved_model[1].signatures["serving_default"](text=tf.constant(TEXTS))
    for quantize, tolerance in ((None, 1e-5), ("dynamic", 0.1)):
        path = export_tflite(embedder, embedder.preprocessor, tmp_path / f"{quantize}.tflite",
                             quantize=quantize)
        content = path.read_bytes()
        assert unsupported_tflite_ops(tflite_op_types(content)) == set()
        runner = litert.InterpreterWithCustomOps(
            custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
            model_content=content).get_signature_runner("serving_default")
        on_device = np.concatenate([runner(text=np.array([text.encode()], dtype=object))[
            "embedding"] for text in TEXTS])
        difference = np.abs(on_device - served["embedding"].numpy()).max()
        assert difference <= tolerance, (quantize, difference)


def test_tflite_refuses_a_default_prompt_it_cannot_put_before_texts(embedder, tmp_path):
    prompted = kbc.BertEmbedder(embedder.encoder, prompts={"query": "query : "},
                                default_prompt_name="query")
    with pytest.raises(ValueError, match="puts its default prompt 'query : ' before each "
                                         "text, which a .tflite file cannot do"):
        export_tflite(prompted, embedder.preprocessor, tmp_path / "prompted.tflite")
    assert not (tmp_path / "prompted.tflite").exists()
