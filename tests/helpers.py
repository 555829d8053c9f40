"""Shared test checks for layers and models: serialization, symbolic calls, training steps,
mixed precision, `.keras` round trips; folders built once for every pytest-xdist worker
(`built_once`). Import as `from tests.helpers import ...`."""

import contextlib
import fcntl
import os
import re
import shutil
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
from keras import ops

import keras_bert_core as kbc


def tiny_encoder(**overrides):
    """A small random `BertEncoder` (the "tiny" preset, 100 word ids, 64 positions)."""
    config = kbc.BertConfig.preset(
        "tiny", **{"vocab_size": 100, "max_position_embeddings": 64, **overrides})
    return kbc.BertEncoder(config)


def encoder_batch(batch=4, seq=16, vocab_size=100, seed=0):
    """Random int32 encoder inputs with padding at the end of every row but the first."""
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([[seq], rng.integers(seq // 2, seq + 1, size=batch - 1)])
    mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, vocab_size, size=(batch, seq)).astype("int32") * mask
    segments = (np.arange(seq)[None] >= lengths[:, None] // 2).astype("int32") * mask
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


@contextlib.contextmanager
def zero_initialized_weights():
    """New weights start at zero instead of random draws, for tests that build full-size
    presets only to count their parameters (drawing a large model's weights costs most of
    its build time)."""
    def zeros(self, shape, dtype=None):
        return keras.ops.zeros(shape, dtype)

    random_initializers = (keras.initializers.TruncatedNormal, keras.initializers.RandomNormal,
                           keras.initializers.RandomUniform, keras.initializers.GlorotUniform)
    with contextlib.ExitStack() as stack:
        for initializer in random_initializers:
            stack.enter_context(mock.patch.object(initializer, "__call__", zeros))
        yield


@contextlib.contextmanager
def graph_optimizations():
    """Grappler on for the block, as TensorFlow and TF Serving run by default (tests/conftest.py
    turns it off for the suite), then off again."""
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


@contextlib.contextmanager
def global_dtype_policy(name):
    """Sets the global dtype policy for the block, then restores the previous one."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _numpy(structure):
    return keras.tree.map_structure(lambda t: np.asarray(ops.convert_to_numpy(t)), structure)


def _assert_finite(structure):
    for value in keras.tree.flatten(_numpy(structure)):
        assert np.isfinite(value.astype("float32")).all()


def run_layer_checks(make_layer, inputs, expected_output_shape=None,
                     mixed_precision_output_dtype="bfloat16", untrained_weights=()):
    """Runs the checks every layer of the package must pass.

    - an eager call gives `expected_output_shape`;
    - a symbolic call gives the eager outputs' shapes (the batch left open) and dtypes;
    - `get_config` -> `from_config`, and Keras (de)serialization by registered name, give a
      layer with the same config and, with the weights copied, the same outputs;
    - one `fit` step in a functional model changes every trainable weight but those whose
      path matches a pattern in `untrained_weights`, with a finite loss;
    - under `"mixed_bfloat16"` the outputs are finite, of `mixed_precision_output_dtype`,
      and the variables stay float32.

    Args:
        make_layer: `make_layer(**kwargs)` returns a new layer; the checks pass `dtype=`.
        inputs: tuple of numpy arrays, the positional call arguments (batch first).
        expected_output_shape: optional expected eager output shape (a dict of them for
            dict outputs).
        mixed_precision_output_dtype: the outputs' dtype under mixed precision.
        untrained_weights: regex patterns of weight paths a training step may leave alone.
    """
    layer = make_layer()
    outputs = _numpy(layer(*inputs))
    if expected_output_shape is not None:
        shapes = outputs.shape if isinstance(outputs, np.ndarray) else {
            key: value.shape for key, value in outputs.items()}
        assert shapes == expected_output_shape, f"output shapes {shapes}"

    # Symbolic call, any batch size.
    symbolic = layer(*[keras.KerasTensor((None, *a.shape[1:]), dtype=str(a.dtype))
                       for a in inputs])
    keras.tree.assert_same_structure(symbolic, outputs)
    for spec, value in zip(keras.tree.flatten(symbolic), keras.tree.flatten(outputs),
                           strict=True):
        assert tuple(spec.shape[1:]) == value.shape[1:]
        assert keras.backend.standardize_dtype(spec.dtype) == str(value.dtype)

    # Serialization round trips.
    for revived in (layer.__class__.from_config(layer.get_config()),
                    keras.saving.deserialize_keras_object(
                        keras.saving.serialize_keras_object(layer))):
        revived(*inputs)
        revived.set_weights(layer.get_weights())
        assert revived.get_config() == layer.get_config()
        for a, b in zip(keras.tree.flatten(outputs), keras.tree.flatten(_numpy(revived(*inputs))),
                        strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)

    _check_fit_step(make_layer(), inputs, untrained_weights)

    mixed = make_layer(dtype="mixed_bfloat16")
    mixed_outputs = _numpy(mixed(*inputs))
    _assert_finite(mixed_outputs)
    for value in keras.tree.flatten(mixed_outputs):
        assert keras.backend.standardize_dtype(value.dtype) == mixed_precision_output_dtype
    assert all(w.dtype == "float32" for w in mixed.weights)


def _check_fit_step(layer, inputs, untrained_weights):
    symbolic = [keras.Input(shape=a.shape[1:], dtype=str(a.dtype)) for a in inputs]
    # One scalar per example from every output, so any output structure trains.
    per_example = [ops.mean(ops.cast(t, "float32"), axis=tuple(range(1, len(t.shape))))
                   for t in keras.tree.flatten(layer(*symbolic))]
    model = keras.Model(symbolic, ops.sum(ops.stack(per_example, axis=1), axis=1))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [(w, np.array(w)) for w in layer.trainable_weights]
    targets = np.random.default_rng(0).normal(size=len(inputs[0])).astype("float32") + 3.0
    history = model.fit(list(inputs), targets, batch_size=len(inputs[0]), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    unchanged = [w.path for w, value in before if np.array_equal(value, np.array(w))
                 and not any(re.search(pattern, w.path) for pattern in untrained_weights)]
    assert not unchanged, f"a training step left {unchanged} unchanged"


def check_keras_file_round_trip(model, inputs, path):
    """Saves `model` as `.keras`, loads it, and checks class, config and outputs are identical.

    Returns the loaded model.
    """
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    assert restored.get_config() == model.get_config()
    for a, b in zip(keras.tree.flatten(_numpy(model(inputs))),
                    keras.tree.flatten(_numpy(restored(inputs))), strict=True):
        np.testing.assert_array_equal(a, b)
    return restored


def check_trains(model, x, y, sample_weight=None, steps=3, decreasing=True):
    """Fits `steps` steps on one static-shape batch; the losses are finite and, if
    `decreasing`, the last is below the first. Returns the history."""
    batch_size = len(keras.tree.flatten(x)[0])
    history = model.fit(x, y, sample_weight=sample_weight, batch_size=batch_size,
                        epochs=steps, shuffle=False, verbose=0).history
    losses = history["loss"]
    assert np.isfinite(losses).all(), losses
    if decreasing:
        assert losses[-1] < losses[0], losses
    return history


def cross_entropy(logits, labels):
    """Per-label softmax cross-entropy in numpy: `logits [..., classes]`, int `labels [...]`."""
    logits = np.asarray(logits, "float64")
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, np.asarray(labels)[..., None], -1)[..., 0]


HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def offline_hub_cache(monkeypatch, cache, repo_id, folder):
    """A Hugging Face Hub cache at `cache` holding the files of `folder` as `repo_id`'s
    snapshot in huggingface_hub's own layout (models--org--name/blobs/<sha256>, linked from
    snapshots/<commit>/<file>; refs/main), used offline: the environment says so, and so do
    huggingface_hub's constants, which it reads from the environment once, on import."""
    import hashlib
    import shutil

    import huggingface_hub.constants

    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / HUB_COMMIT
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as file:
            digest = hashlib.sha256(file.read()).hexdigest()
        shutil.copyfile(os.path.join(folder, name), repo / "blobs" / digest)
        (snapshot / name).symlink_to(os.path.join("..", "..", "blobs", digest))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(HUB_COMMIT)
    for name, value in {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": True}.items():
        monkeypatch.setenv(name, "1" if value is True else value)
        monkeypatch.setattr(huggingface_hub.constants, name, value)
    return snapshot


def built_once(tmp_path_factory, name, build):
    """The folder `build(folder)` writes, built by whichever pytest-xdist worker asks first;
    the others wait for it and read the same folder (tests read it, never write it)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's
    shared = root / "built_once"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed part way
            build(folder)
            done.touch()
    return folder
