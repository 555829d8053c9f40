"""A teacher's outputs computed once and stored as TFRecords, so that distillation does not
run a large teacher at every epoch: `cache_teacher_outputs` writes them with the batches
they belong to, `load_teacher_outputs` reads them back as `Distiller` batches.

A folder holds `teacher_outputs.tfrecord` (one `tf.train.Example` per example: its inputs,
targets, sample weights and the teacher's outputs, flattened) and `spec.json` (each
feature's dtype and shape, and how they nest). The data is stored as it came: a dataset that
masks or shuffles at random is stored with the draw of the pass that wrote it.
"""

import json
import os

import numpy as np
import tensorflow as tf

from keras_bert_core.models.distillation import TEACHER_OUTPUTS

RECORDS_FILE = "teacher_outputs.tfrecord"
SPEC_FILE = "spec.json"
PARTS = ("x", "y", "sample_weight", "teacher")


def _flatten(part, value):
    """`(spec, {feature name: array})` of a batch's part: None, an array, or a dict of them."""
    if value is None:
        return None, {}
    if isinstance(value, dict):
        arrays = {f"{part}/{name}": np.asarray(item) for name, item in value.items()
                  if item is not None}
        names = {name: f"{part}/{name}" for name, item in value.items() if item is not None}
    else:
        arrays = {part: np.asarray(value)}
        names = None
    spec = {"names": names, "features": {
        key: {"dtype": array.dtype.name, "shape": list(array.shape[1:])}
        for key, array in arrays.items()}}
    return spec, arrays


def _feature(array):
    flat = array.reshape(-1)
    if np.issubdtype(array.dtype, np.floating):
        return tf.train.Feature(float_list=tf.train.FloatList(value=flat.astype(np.float32)))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=flat.astype(np.int64)))


def cache_teacher_outputs(teacher, dataset, path):
    """Runs `teacher` (inference mode) once over `dataset` and stores each example with the
    teacher's outputs in the folder `path` (created; an existing one is replaced).

    Args:
        teacher: the trained task model.
        dataset: batches of `x`, `(x, y)` or `(x, y, sample_weight)` (a `tf.data.Dataset` or
            any iterable of numpy batches), every example of one shape (the training
            datasets pad to `seq_length`).
        path: the folder to write.

    Returns the number of examples stored.

    Example:
    >>> import numpy as np, tempfile
    >>> import keras_bert_core as kbc
    >>> teacher = kbc.BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
    ...     "tiny", vocab_size=100)), num_classes=2)
    >>> ids = np.array([[2, 10, 11, 3], [2, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> folder = tempfile.mkdtemp()
    >>> cache_teacher_outputs(teacher, [(x, np.array([1, 0]))], folder)
    2
    >>> x_stored, y = next(iter(load_teacher_outputs(folder, batch_size=2)))
    >>> x_stored["teacher_outputs"].shape, y.numpy().tolist()
    (TensorShape([2, 2]), [1, 0])
    """
    import keras

    os.makedirs(path, exist_ok=True)
    spec = None
    count = 0
    partial = os.path.join(path, RECORDS_FILE + ".partial")
    with tf.io.TFRecordWriter(partial) as writer:
        for batch in dataset:
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
            outputs = teacher(x, training=False)
            parts = {"x": x, "y": y, "sample_weight": sample_weight, "teacher": outputs}
            parts = {name: keras.tree.map_structure(
                lambda v: None if v is None else keras.ops.convert_to_numpy(v), value)
                for name, value in parts.items()}
            specs, arrays = {}, {}
            for name in PARTS:
                specs[name], part_arrays = _flatten(name, parts[name])
                arrays.update(part_arrays)
            if spec is None:
                spec = specs
            elif specs != spec:
                raise ValueError(f"batch {count} differs from the first in its structure, "
                                 "dtypes or example shapes; pad every batch to one length")
            rows = len(next(iter(arrays.values())))
            for row in range(rows):
                example = tf.train.Example(features=tf.train.Features(feature={
                    key: _feature(array[row]) for key, array in arrays.items()}))
                writer.write(example.SerializeToString())
            count += rows
    if spec is None:
        os.remove(partial)
        raise ValueError("the dataset is empty: there is nothing to store")
    os.replace(partial, os.path.join(path, RECORDS_FILE))
    with open(os.path.join(path, SPEC_FILE), "w", encoding="utf-8") as f:
        json.dump({"examples": count, "parts": spec}, f, indent=2)
    return count


def load_teacher_outputs(path, batch_size, shuffle=False, seed=None, drop_remainder=True):
    """The batches `cache_teacher_outputs` stored in `path`, for `Distiller.fit`:
    `(x, y, sample_weight)` (or fewer, as stored), with the teacher's outputs under
    `x["teacher_outputs"]`.

    Args:
        path: the folder written by `cache_teacher_outputs`.
        batch_size: examples per batch.
        shuffle: shuffle the examples (each epoch anew, from `seed`).
        seed: shuffle seed.
        drop_remainder: drop the last partial batch (static shapes for XLA and TPU).
    """
    spec_path = os.path.join(path, SPEC_FILE)
    if not os.path.isfile(spec_path):
        raise FileNotFoundError(f"{path} holds no stored teacher outputs (no {SPEC_FILE})")
    with open(spec_path, encoding="utf-8") as f:
        stored = json.load(f)
    parts = stored["parts"]
    features = {}
    for part in parts.values():
        for key, item in (part or {"features": {}})["features"].items():
            kind = tf.float32 if np.issubdtype(np.dtype(item["dtype"]), np.floating) else tf.int64
            features[key] = tf.io.FixedLenFeature(item["shape"], kind)

    def parse(record):
        values = tf.io.parse_single_example(record, features)
        out = {}
        for name, part in parts.items():
            if part is None:
                continue
            cast = {key: tf.cast(values[key], item["dtype"])
                    for key, item in part["features"].items()}
            out[name] = (cast[name] if part["names"] is None
                         else {field: cast[key] for field, key in part["names"].items()})
        x = out["x"]
        x = {**x, TEACHER_OUTPUTS: out["teacher"]} if isinstance(x, dict) else x
        return tuple(out[name] if name != "x" else x
                     for name in ("x", "y", "sample_weight") if name in out)

    # A known length: Keras misreports the metrics of an epoch of unknown length.
    dataset = tf.data.TFRecordDataset(os.path.join(path, RECORDS_FILE)).apply(
        tf.data.experimental.assert_cardinality(stored["examples"]))
    if shuffle:
        dataset = dataset.shuffle(stored["examples"], seed=seed, reshuffle_each_iteration=True)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(
        batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)
