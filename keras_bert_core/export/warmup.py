"""TF Serving warmup requests: the requests a model server replays before it serves."""

import os

import tensorflow as tf

from keras_bert_core.extras import require

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def write_warmup_requests(export_dir, requests, signature_name="serving_default",
                          model_name="model"):
    """Writes `assets.extra/tf_serving_warmup_requests` into a SavedModel directory.

    TF Serving replays these requests when it loads a version, before it reports the
    version available, so the first client does not pay for lazy initialization. The file
    is a TFRecord of `PredictionLog` protos holding `PredictRequest`s.

    Args:
        export_dir: the SavedModel directory (`<base>/<name>/<version>`).
        requests: a list of requests, each a dict of input name -> array-like.
        signature_name: the signature the requests call.
        model_name: the model name the requests carry.

    Returns:
        The path of the written file.

    Raises:
        ImportError: `tensorflow-serving-api` is not installed.

    Example:
    >>> import tempfile, numpy as np
    >>> path = write_warmup_requests(tempfile.mkdtemp(), [{"text": np.array([b"Hi"])}])
    >>> os.path.basename(path)
    'tf_serving_warmup_requests'
    """
    predict_pb2 = require("tensorflow_serving.apis.predict_pb2", "TF Serving warmup requests")
    prediction_log_pb2 = require("tensorflow_serving.apis.prediction_log_pb2",
                                 "TF Serving warmup requests")
    path = os.path.join(export_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for inputs in requests:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = model_name
            request.model_spec.signature_name = signature_name
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(path):
    """The `PredictRequest`s of a warmup file (for checks and tests).

    Example:
    >>> import tempfile, numpy as np
    >>> path = write_warmup_requests(tempfile.mkdtemp(), [{"text": np.array([b"Hi"])}])
    >>> [sorted(request.inputs) for request in read_warmup_requests(path)]
    [['text']]
    """
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        requests.append(prediction_log_pb2.PredictionLog.FromString(record).predict_log.request)
    return requests
