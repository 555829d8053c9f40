"""The files a run trains on, fingerprinted: recorded in its config.json when it starts, and
checked when `--resume` continues it. A resumed run skips the batches it trained on, counted
in the data it started with: in a file that has changed since, it would skip others, or run
past the end, without a word."""

import hashlib

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say

# The arguments naming training data: pretrain's corpus, --train (finetune, distill) and
# distill's --unlabeled texts. Validation data does not change what a resumed run trains on.
TRAINING_DATA = ("inputs", "train", "unlabeled")
# Files up to this size are hashed whole (task files: a change anywhere is seen); bigger ones
# (pretraining corpora, hashed again at every resume) by their size and their first and last
# MiB, which a cut, an append or a new header changes.
WHOLE_FILE_BYTES = 16 << 20
EDGE_BYTES = 1 << 20


def fingerprint(path):
    """`{"file", "bytes", "sha256"}` of `path`: the sha256 of the whole file up to
    `WHOLE_FILE_BYTES`, else of its first and last `EDGE_BYTES` (so a same-size edit in the
    middle of a big file goes unseen). Not the modification time: a copy or a `touch` of
    the same data is no change."""
    import tensorflow as tf  # tf.io.gfile: corpora on gs:// too

    size = tf.io.gfile.stat(path).length
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        if size <= WHOLE_FILE_BYTES:
            for chunk in iter(lambda: f.read(EDGE_BYTES), b""):
                digest.update(chunk)
        else:
            digest.update(f.read(EDGE_BYTES))
            f.seek(size - EDGE_BYTES)
            digest.update(f.read(EDGE_BYTES))
    return {"file": path, "bytes": size, "sha256": digest.hexdigest()}


def training_files(arguments):
    """The files the training data arguments (a dict, paths absolute) name, globs expanded;
    none for TFDS data."""
    from keras_bert_core.text.corpus_files import glob_files

    return [path for name in TRAINING_DATA if arguments.get(name)
            for path in glob_files(arguments[name])]


def fingerprints(arguments):
    return [fingerprint(path) for path in training_files(arguments)]


def check_unchanged(run_dir, recorded, arguments, allow_changed=False):
    """Refuses to resume `run_dir` when its training files (`arguments`) differ from the
    fingerprints `recorded` at its start (None: a run saved before they were), unless
    `allow_changed` (`--allow-changed-data`), which only says so."""
    if recorded is None:
        return
    try:
        now = fingerprints(arguments)
    except FileNotFoundError as e:  # a file, or every match of a glob, is gone
        now = str(e)
    change = _first_change(recorded, now)
    if change is None:
        return
    if allow_changed:
        say(f"{change}; resuming {run_dir} on it, as --allow-changed-data says")
        return
    raise UserError(f"{change} since {run_dir} started: resumed, it would skip batches "
                    "counted in the old data; pass --allow-changed-data to resume on it "
                    "anyway, or start a new run")


def _first_change(recorded, now):
    if isinstance(now, str):
        return now.rstrip(".")
    before = {r["file"]: r for r in recorded}
    after = {r["file"]: r for r in now}
    for path in before.keys() - after.keys():
        return f"the training file {path} is gone"
    for path in after.keys() - before.keys():
        return f"the training data has a new file, {path}"
    for path, old in before.items():
        new = after[path]
        if (old["bytes"], old["sha256"]) != (new["bytes"], new["sha256"]):
            return (f"{path} changed ({old['bytes']} bytes, sha256 {old['sha256'][:12]}... "
                    f"then; {new['bytes']} bytes, sha256 {new['sha256'][:12]}... now)")
    return None
