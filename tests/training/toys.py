"""A tiny BERT classifier and a learnable toy dataset, a tiny embedder and its contrastive
columns, shared by the training tests and the worker scripts they start
(`python -m tests.training.<script>` from the repository root), and the means to start
such scripts as a cluster of workers on localhost."""

import json
import os
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.embedding_losses import ContrastiveLoss

SEQ = 16
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tiny_config(**overrides):
    """One small block, no dropout: runs are deterministic given the initial weights."""
    return kbc.BertConfig(**{
        "vocab_size": 64, "hidden_size": 32, "num_layers": 1, "num_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": SEQ, "dropout": 0.0,
        "attention_dropout": 0.0, **overrides})


def toy_classifier(optimizer=None, **encoder_kwargs):
    """A `BertClassifier` on a tiny encoder, compiled with `optimizer` (else its default)."""
    encoder = kbc.BertEncoder(tiny_config(), **encoder_kwargs)
    model = BertClassifier(encoder, num_classes=2, dropout=0.0)
    if optimizer is not None:
        model.compile(optimizer=optimizer)
    return model


def toy_examples(num_examples, seed=0):
    """Encoder inputs and labels (is token 1 even?), int32 as the encoder wants them."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(4, 64, size=(num_examples, SEQ)).astype("int32")
    ids[:, 0] = 2
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    return x, (ids[:, 1] % 2).astype("int32")


def toy_dataset(batch_size, num_examples=64, seed=0):
    """The toy examples batched with static shapes, in a fixed order."""
    return tf.data.Dataset.from_tensor_slices(toy_examples(num_examples, seed)).batch(
        batch_size, drop_remainder=True)


# The global batch and steps of the two-worker embedder run (multi_worker.py) and of the
# one-device run the test compares it with.
EMBEDDER_BATCH, EMBEDDER_STEPS = 8, 3


def toy_embedder():
    """A `BertEmbedder` (mean pooling, unit vectors) on the tiny encoder, compiled without
    XLA with SGD(0.5) and `ContrastiveLoss(scale=5)`."""
    model = kbc.BertEmbedder(kbc.BertEncoder(tiny_config()))
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=ContrastiveLoss(scale=5.0),
                  jit_compile=False)
    return model


def toy_columns(num_examples, seed=0):
    """Encoder inputs `[num_examples, 3, SEQ]` (anchor, positive, hard negative) for
    `toy_embedder`."""
    ids = np.random.default_rng(seed).integers(4, 64, size=(num_examples, 3, SEQ))
    ids = ids.astype("int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def step_losses(model, x, batch_size, steps):
    """Each step's loss (one step per epoch, so not a running mean) and the final weights of
    `steps` steps of `model.fit` on `x`'s batches of `batch_size` in order, labels zero."""
    first = tf.nest.flatten(x)[0]
    dataset = tf.data.Dataset.from_tensor_slices((x, np.zeros(len(first), "float32")))
    history = model.fit(dataset.batch(batch_size).repeat(), steps_per_epoch=1, epochs=steps,
                        shuffle=False, verbose=0)
    return history.history["loss"], model.get_weights()


def write_result(path, **values):
    """Writes a worker's findings as JSON for the test that started it."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)


def run_script(module, *args, env=None, **popen_kwargs):
    """Starts `python -m tests.training.<module> args...`; see `run_module`."""
    return run_module(f"tests.training.{module}", *args, env=env, **popen_kwargs)


def run_module(module, *args, env=None, **popen_kwargs):
    """Starts `python -m <module> args...` from the repository root, quiet and CPU-only,
    without the parent's TF_CONFIG; returns the `subprocess.Popen`."""
    environment = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    environment.update({"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", **(env or {})})
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, args)], cwd=ROOT,
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        **popen_kwargs)


def read_output(process, timeout=300):
    """The process's output once it has exited with status 0 (else the assertion fails)."""
    try:
        output, _ = process.communicate(timeout=timeout)
    except Exception:
        process.kill()
        raise
    assert process.returncode == 0, output[-5000:]
    return output


def wait_until(condition, process, what, timeout=300):
    """Polls `condition()` until it holds; fails the test, with the process's output, if the
    process ends first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            output = process.stdout or process.stderr
            pytest.fail(f"the process ended before {what}:\n{output.read()[-5000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.02)


def cluster_environments(count):
    """A `TF_CONFIG` environment for each of `count` workers on free localhost ports."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    workers = [f"127.0.0.1:{s.getsockname()[1]}" for s in sockets]
    for s in sockets:
        s.close()
    return [{"TF_CONFIG": json.dumps({"cluster": {"worker": workers},
                                      "task": {"type": "worker", "index": index}})}
            for index in range(count)]
