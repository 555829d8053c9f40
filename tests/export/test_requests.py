"""The deployment recipes in export/ agree with what the exports serve."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.protobuf import saved_model_pb2

from tests.export.helpers import ROOT

EXPORT = ROOT / "export"
REQUESTS = EXPORT / "requests"
# What a JSON value of each signature dtype looks like (TF Serving's REST encoding).
JSON_KINDS = {tf.string.as_datatype_enum: "U", tf.int32.as_datatype_enum: "i"}


def _signature_defs(export_dir):
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return saved_model.meta_graphs[0].signature_def


def _serving_api():
    try:
        from tensorflow_serving.apis import predict_pb2
        from tensorflow_serving.config import model_server_config_pb2
    except ImportError:
        pytest.skip("tensorflow-serving-api is not installed (pip install "
                    "tensorflow-serving-api): cannot parse gRPC requests or the model config")
    return predict_pb2, model_server_config_pb2


def test_rest_bodies_match_the_signatures(task_exports, task_signatures):
    paths = sorted(REQUESTS.glob("*/*.json"))
    assert {path.parent.name for path in paths} == set(task_exports)
    for path in paths:
        model, signature = path.parent.name, path.stem
        body = json.loads(path.read_text())
        assert body["signature_name"] == signature, path
        inputs = _signature_defs(task_exports[model])[signature].inputs
        if "instances" in body:  # row format: one object per example
            assert all(set(row) == set(inputs) for row in body["instances"]), path
            columns = {name: [row[name] for row in body["instances"]] for name in inputs}
        else:  # columnar format
            columns = body["inputs"]
        assert set(columns) == set(inputs), path
        for name, values in columns.items():
            array = np.array(values)
            assert array.ndim == len(inputs[name].tensor_shape.dim), (path, name)
            assert array.dtype.kind == JSON_KINDS[inputs[name].dtype], (path, name)
        outputs = task_signatures[model][signature](
            **{name: tf.constant(values, tf.as_dtype(inputs[name].dtype))
               for name, values in columns.items()})
        assert all(value.shape[0] == len(next(iter(columns.values())))
                   for value in outputs.values()), path


def test_grpc_requests_match_the_signatures(task_exports, task_signatures):
    predict_pb2, _ = _serving_api()
    paths = sorted(REQUESTS.glob("*/*.pbtxt"))
    assert paths
    for path in paths:
        request = text_format.Parse(path.read_text(), predict_pb2.PredictRequest())
        model, signature = request.model_spec.name, request.model_spec.signature_name
        assert (model, signature) == (path.parent.name, path.stem), path
        inputs = _signature_defs(task_exports[model])[signature].inputs
        assert set(request.inputs) == set(inputs), path
        for name, tensor in request.inputs.items():
            assert tensor.dtype == inputs[name].dtype, (path, name)
            assert len(tensor.tensor_shape.dim) == len(inputs[name].tensor_shape.dim), path
        outputs = task_signatures[model][signature](
            **{name: tf.constant(tf.make_ndarray(tensor))
               for name, tensor in request.inputs.items()})
        assert outputs, path


def test_model_config_serves_every_request_folder():
    _, model_server_config_pb2 = _serving_api()
    config = text_format.Parse((EXPORT / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    models = {m.name: m.base_path for m in config.model_config_list.config}
    assert set(models) == {path.name for path in REQUESTS.iterdir() if path.is_dir()}
    assert all(base == f"/models/{name}" for name, base in models.items())
