"""Readers: the names and shapes in a checkpoint, and one array at a time, as numpy.

A reader has `path` (named in errors), `shapes` (key -> shape tuple) and `read(key)`. Every
failure of the underlying library becomes a `CheckpointError` naming the file. Nothing here
unpickles: safetensors are read as numpy, TensorFlow checkpoints with
`tf.train.load_checkpoint`.
"""

from __future__ import annotations

import glob
import os

from keras_bert_core.errors import CheckpointError


def describe_error(error):
    """The first line of a library's error: TensorFlow's can run to many lines."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


class SafetensorsReader:
    """One or more `.safetensors` files (a sharded checkpoint) read as one."""

    def __init__(self, files, path=None):
        from safetensors import safe_open

        self._open = safe_open
        self.path = path or files[0]
        self.shapes, self._files = {}, {}
        for file in files:
            try:
                with safe_open(file, framework="np") as f:
                    for key in f.keys():
                        self.shapes[key] = tuple(f.get_slice(key).get_shape())
                        self._files[key] = file
            except Exception as e:  # SafetensorError, OSError: truncated, not safetensors...
                raise CheckpointError(
                    f"{file}: not a readable safetensors file ({describe_error(e)})") from None

    def read(self, key):
        file = self._files[key]
        try:
            with self._open(file, framework="np") as f:
                return f.get_tensor(key)
        except Exception as e:
            raise CheckpointError(f"{file}: cannot read {key!r} ({describe_error(e)})") from None


class TFCheckpointReader:
    """A TensorFlow checkpoint (TF1 name-based or TF2 object-based), given its prefix."""

    def __init__(self, prefix):
        import tensorflow as tf

        self.path = prefix
        try:
            self._reader = tf.train.load_checkpoint(prefix)
        except Exception as e:
            raise CheckpointError(f"{prefix}.index: not a readable TensorFlow checkpoint "
                                  f"({describe_error(e)})") from None
        self.shapes = {key: tuple(shape)
                       for key, shape in self._reader.get_variable_to_shape_map().items()}

    def read(self, key):
        try:
            return self._reader.get_tensor(key)
        except Exception as e:  # checksum mismatch, short read: a corrupt .data file
            files = ", ".join(sorted(glob.glob(glob.escape(self.path) + ".data-*")))
            raise CheckpointError(
                f"{files or self.path}: cannot read {key!r} ({describe_error(e)})") from None


class RenamedReader:
    """Another reader's weights under new names: `names` maps new name -> original key."""

    def __init__(self, reader, names):
        self.path = reader.path
        self._reader = reader
        self._names = names
        self.shapes = {new: reader.shapes[old] for new, old in names.items()}

    def read(self, key):
        return self._reader.read(self._names[key])


class ArrayReader:
    """Arrays already in memory (e.g. another library's model variables), by name."""

    def __init__(self, path, arrays):
        self.path = path
        self._arrays = arrays
        self.shapes = {key: tuple(array.shape) for key, array in arrays.items()}

    def read(self, key):
        return self._arrays[key]


def tf_checkpoint_prefix(path):
    """The prefix of the TensorFlow checkpoint at `path`, or `None` if there is none.

    `path` may be the prefix itself, its `.index` or `.data-*` file, or a folder holding
    one checkpoint (or a `checkpoint` file naming the latest).
    """
    import tensorflow as tf

    path = os.fspath(path)
    if path.endswith(".index"):
        path = path[: -len(".index")]
    elif ".data-" in os.path.basename(path):
        path = path[: path.rindex(".data-")]
    if os.path.isfile(path + ".index"):
        return path
    if not os.path.isdir(path):
        return None
    latest = tf.train.latest_checkpoint(path)
    if latest:
        return latest
    indexes = sorted(glob.glob(os.path.join(glob.escape(path), "*.index")))
    if len(indexes) > 1:
        raise CheckpointError(f"{path}: holds several TensorFlow checkpoints "
                              f"({', '.join(os.path.basename(i) for i in indexes)}); "
                              "pass the prefix of the one to load")
    return indexes[0][: -len(".index")] if indexes else None


def open_tf_checkpoint(path):
    """A `TFCheckpointReader` on the checkpoint at `path` (see `tf_checkpoint_prefix`)."""
    prefix = tf_checkpoint_prefix(path)
    if prefix is None:
        raise CheckpointError(f"{path}: no TensorFlow checkpoint (no .index file) found")
    return TFCheckpointReader(prefix)
