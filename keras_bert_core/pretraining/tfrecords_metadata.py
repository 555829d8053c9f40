"""What pretraining TFRecords were written with, in a JSON file beside their shards
(`{prefix}.meta.json`): the vocabulary (sha256 of its files, its size), the sequence length,
the casing and the pair task. Training from the shards checks its vocabulary against it;
shards written before it existed are checked as far as their records tell."""

import json
import re

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError, VocabularyMismatchError
from keras_bert_core.text.vocabulary.files import tokenizer_kind
from keras_bert_core.text.vocabulary.identity import vocabulary_fingerprint

METADATA_SUFFIX = ".meta.json"
_SHARD = re.compile(r"^(?P<prefix>.*)-\d{5}-of-\d{5}\.tfrecords?$")
# Records read for the ids of shards without metadata: enough to meet most of a
# vocabulary's frequent pieces, few enough to take a moment.
_IDS_CHECKED = 1000


def write_tfrecords_metadata(output_prefix, tokenizer, seq_length, pair_task, num_shards):
    """Writes `{output_prefix}.meta.json` for the shards `write_pretraining_tfrecords`
    wrote. No masking settings: masks are drawn when the records are read."""
    values = {
        "vocabulary_sha256": vocabulary_fingerprint(tokenizer),
        "vocabulary_size": tokenizer.vocabulary_size(),
        "tokenizer": tokenizer_kind(tokenizer),
        "lower_case": bool(getattr(tokenizer, "lower_case", False)),
        "seq_length": seq_length,
        "pair_task": pair_task,
        "num_shards": num_shards,
    }
    path = output_prefix + METADATA_SUFFIX
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(values, indent=2) + "\n")
    return path


def read_tfrecords_metadata(paths):
    """`(metadata file, its values)` of shards named as `write_pretraining_tfrecords` names
    them, or None when they have none (written before it existed, or by another tool).

    Raises:
        DataError: some of the shards have metadata and others none, or theirs differ.
    """
    prefixes = sorted({match["prefix"] for match in map(_SHARD.match, paths) if match})
    files = [prefix + METADATA_SUFFIX for prefix in prefixes]
    found = [file for file in files if tf.io.gfile.exists(file)]
    if not found:
        return None
    lacking = [path for path in paths if not _SHARD.match(path)] + [
        file for file in files if file not in found]
    if lacking:
        raise DataError(f"some shards were written with metadata ({found[0]}) and others "
                        f"without ({lacking[0]}): train on shards of one writing")
    values = [_read(file) for file in found]
    for file, other in zip(found[1:], values[1:], strict=True):
        if other != values[0]:
            raise DataError(f"{found[0]} and {file} differ: the shards were written with "
                            "other settings; train on shards of one writing")
    return found[0], values[0]


def _read(file):
    try:
        with tf.io.gfile.GFile(file) as f:
            values = json.load(f)
    except ValueError as e:
        raise DataError(f"not JSON ({e})", path=file) from None
    if not isinstance(values, dict):
        raise DataError("not a JSON object", path=file)
    return values


def check_records_vocabulary(paths, tokenizer, vocabulary="the given vocabulary"):
    """Raises `VocabularyMismatchError` when `tokenizer` is not the vocabulary the shards
    were written with (their metadata's sha256 and size), or, for shards without metadata,
    when their first records hold ids past its end (a larger vocabulary cannot be told).

    Returns:
        `read_tfrecords_metadata`'s answer.
    """
    metadata = read_tfrecords_metadata(paths)
    size = tokenizer.vocabulary_size()
    if metadata is None:
        highest = _highest_id(paths)
        if highest >= size:
            raise VocabularyMismatchError(
                f"{vocabulary} has {size:,} tokens but the records {paths[0]} hold token id "
                f"{highest:,}: they were written with another vocabulary; train on them with "
                "that one")
        return None
    file, values = metadata
    if (values.get("vocabulary_sha256") != vocabulary_fingerprint(tokenizer)
            or values.get("vocabulary_size") != size):
        raise VocabularyMismatchError(
            f"{vocabulary} ({size:,} tokens) is not the vocabulary the records were written "
            f"with ({values.get('vocabulary_size'):,} tokens, as {file} says): give the "
            "vocabulary written beside them")
    return metadata


def _highest_id(paths):
    spec = {"input_ids": tf.io.VarLenFeature(tf.int64)}
    highest = -1
    for serialized in tf.data.TFRecordDataset(paths).take(_IDS_CHECKED).batch(_IDS_CHECKED):
        ids = tf.io.parse_example(serialized, spec)["input_ids"].values.numpy()
        highest = max(highest, int(np.max(ids, initial=-1)))
    return highest
