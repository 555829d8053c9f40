"""Pretraining sentence pairs stored as sharded TFRecords, in google-research's feature
names, and read back as the `(x, y, sample_weight)` batches that `pretraining_data`
describes. The files hold unmasked pairs: masking is drawn afresh per batch at read time.
Pair labels (next sentence, or ALBERT's sentence order) keep google-research's feature name
`next_sentence_labels`, as ALBERT's files do; a `pair_task` feature says which task they
are for (google-research's readers ignore it)."""

import contextlib
import os

import tensorflow as tf

from keras_bert_core.pretraining.data import (
    masked_training_batches,
    packed_batches,
    shuffled_pairs,
)
from keras_bert_core.pretraining.masking import MaskedLMMasker
from keras_bert_core.pretraining.pairs import resolve_pair_task
from keras_bert_core.pretraining.tfrecords_metadata import (
    check_records_vocabulary,
    write_tfrecords_metadata,
)
from keras_bert_core.text.corpus_files import glob_files

# Feature names of google-research's pretraining TFRecords, minus the masked-LM fields.
_RECORD_FEATURES = ("input_ids", "input_mask", "segment_ids")
_LABELS, _PAIR_TASK = "next_sentence_labels", "pair_task"


def write_pretraining_tfrecords(
    files,
    tokenizer,
    output_prefix,
    seq_length=128,
    num_shards=1,
    dupe_factor=1,
    seed=None,
    short_seq_prob=0.1,
    document_buffer_size=1000,
    window_size=32,
    shuffle_buffer_size=10000,
    pair_task="next_sentence",
    next_sentence=None,
):
    """Writes unmasked sentence pairs to sharded TFRecord files, for `read_pretraining_tfrecords`.

    Pairs are made as in `pretraining_dataset`, `dupe_factor` times with fresh random
    splits, and written round-robin to the shards. Each `tf.train.Example` holds int64
    features `input_ids`, `input_mask`, `segment_ids` (`[seq_length]`) and
    `next_sentence_labels` (`[1]`, the pair label of `pair_task`; not with
    `pair_task=None`), named as in google-research's files, and a bytes feature
    `pair_task` naming the task of the labels; the masked-LM fields are left out, so
    masking stays dynamic at read time. Beside them, `{output_prefix}.meta.json` records
    the vocabulary (sha256 of its files and size), `seq_length`, the casing and the pair
    task (`tfrecords_metadata`), which training from the shards checks.

    Args:
        files: a path or glob, or a list of them, of one-sentence-per-line text files.
        tokenizer: a tokenizer layer of the package (WordPiece, BPE or SentencePiece);
            rows are packed as its family packs them.
        output_prefix: path prefix; shards are `{prefix}-00000-of-00004.tfrecord`, ...
        seq_length: int, the packed length.
        num_shards: int.
        dupe_factor: int, passes over the corpus, each with different pairs.
        seed: int or None.
        short_seq_prob: float, as in `pretraining_dataset`.
        document_buffer_size: int, as in `pretraining_dataset`.
        window_size: int, as in `pretraining_dataset`.
        shuffle_buffer_size: int, as in `pretraining_dataset`.
        pair_task: "next_sentence", "sentence_order" or None, as in `pretraining_dataset`.
        next_sentence: bool or None, the older form of `pair_task`, as in
            `pretraining_dataset`.

    Returns:
        The list of shard paths.

    Example:

    >>> import os, tempfile
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> corpus = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(corpus, "w").write("The fox runs.\\nThe fox sleeps.\\n\\nThe dog runs.\\n")
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox",
    ...                            "dog", "runs", "sleeps", "."])
    >>> prefix = os.path.join(os.path.dirname(corpus), "pairs")
    >>> paths = write_pretraining_tfrecords(corpus, tokenizer, prefix, seq_length=16,
    ...                                     num_shards=2, seed=1)
    >>> [os.path.basename(path) for path in paths]
    ['pairs-00000-of-00002.tfrecord', 'pairs-00001-of-00002.tfrecord']
    >>> x, y, sample_weight = next(iter(read_pretraining_tfrecords(
    ...     paths, tokenizer, batch_size=2, max_predictions_per_seq=2, seed=1)))
    >>> x["token_ids"].shape.as_list(), y["nsp"].shape.as_list()
    ([2, 16], [2])

    On a real corpus:

    >>> paths = write_pretraining_tfrecords("corpus/*.txt", tokenizer, "data/wiki",
    ...                                     num_shards=4, dupe_factor=5)  # doctest: +SKIP
    """
    pair_task = resolve_pair_task(pair_task, next_sentence)
    pairs = shuffled_pairs(files, tokenizer, seq_length, pair_task, seed, short_seq_prob,
                           document_buffer_size, window_size, shuffle_buffer_size, dupe_factor)
    batches = packed_batches(pairs, tokenizer, seq_length, batch_size=256, drop_remainder=False,
                             with_pairs=pair_task is not None)
    paths = [f"{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    if os.path.dirname(output_prefix):
        tf.io.gfile.makedirs(os.path.dirname(output_prefix))
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(tf.io.TFRecordWriter(path)) for path in paths]
        for i, example in enumerate(_serialized_examples(batches, pair_task)):
            writers[i % num_shards].write(example)
    write_tfrecords_metadata(output_prefix, tokenizer, seq_length, pair_task, num_shards)
    return paths


def _serialized_examples(batches, pair_task):
    """`tf.train.Example` bytes of every packed pair, in google-research's feature names."""
    for packed, labels in batches.as_numpy_iterator():
        columns = [packed["token_ids"], packed["padding_mask"], packed["segment_ids"]]
        for row, label in enumerate(labels):
            feature = {
                name: tf.train.Feature(int64_list=tf.train.Int64List(value=column[row]))
                for name, column in zip(_RECORD_FEATURES, columns, strict=True)
            }
            if pair_task is not None:
                feature[_LABELS] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
                feature[_PAIR_TASK] = tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[pair_task.encode()])
                )
            yield tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _first_record(paths):
    """The features of the first record in `paths`."""
    first = next(iter(tf.data.TFRecordDataset(paths).take(1)), None)
    if first is None:
        raise ValueError(f"No records in {paths}.")
    return tf.train.Example.FromString(first.numpy()).features.feature


def tfrecords_seq_length(files):
    """The length of the rows in TFRecord shards, read from their first record.

    Example:

    >>> tfrecords_seq_length("data/wiki-*.tfrecord")  # doctest: +SKIP
    128
    """
    return len(_first_record(glob_files(files))["input_ids"].int64_list.value)


def tfrecords_pair_task(files):
    """The pair task whose labels `write_pretraining_tfrecords` shards hold, read from the
    first record: "next_sentence", "sentence_order", None (no pair labels: masked LM
    alone), or "unknown" for labels without a `pair_task` feature (google-research's
    files, BERT's or ALBERT's, and this package's before it recorded the task).

    Example:

    >>> tfrecords_pair_task("data/wiki-sop-*.tfrecord")  # doctest: +SKIP
    'sentence_order'
    """
    features = _first_record(glob_files(files))
    if _LABELS not in features:
        return None
    if _PAIR_TASK not in features:
        return "unknown"
    return features[_PAIR_TASK].bytes_list.value[0].decode()


def read_pretraining_tfrecords(
    files,
    vocabulary,
    batch_size=32,
    max_predictions_per_seq=20,
    seed=None,
    whole_word_masking=False,
    mask_rate=0.15,
    shuffle_buffer_size=10000,
    max_ngram=1,
):
    """Reads `write_pretraining_tfrecords` shards and masks them afresh per batch.

    Args:
        files: a path or glob, or a list of them, of TFRecord shards.
        vocabulary: the tokenizer used for writing, or its vocabulary (list or path);
            masking needs the `[MASK]` id, the special tokens and the `##` pieces. A
            tokenizer is checked against the shards (`check_records_vocabulary`).
        batch_size: int.
        max_predictions_per_seq: int, `P`.
        seed: int or None; shard order, record shuffling and masks follow it.
        whole_word_masking: bool.
        mask_rate: float.
        shuffle_buffer_size: int, records held for shuffling.
        max_ngram: int, n-gram masking as in `pretraining_dataset`.

    Raises:
        VocabularyMismatchError: the tokenizer is not the one the shards were written with.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as described in `pretraining_data`'s
        docstring, with the sequence length the files were written with, and "nsp" targets
        where the files hold pair labels, next-sentence or sentence-order
        (`tfrecords_pair_task` tells which; none if written with `pair_task=None`). One
        pass; add `.repeat()` for more. Under a multi-worker
        strategy every worker reads all the shards and keeps its share of each batch.

    Example:

    >>> ds = read_pretraining_tfrecords("data/wiki-*.tfrecord", tokenizer,
    ...                                 batch_size=32, seed=1)  # doctest: +SKIP
    """
    paths = glob_files(files)
    if hasattr(vocabulary, "vocabulary_size"):  # a tokenizer: it must be the shards' own
        check_records_vocabulary(paths, vocabulary)
    features = _first_record(paths)
    seq_length = len(features["input_ids"].int64_list.value)
    with_pairs = _LABELS in features
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in _RECORD_FEATURES}
    if with_pairs:
        spec[_LABELS] = tf.io.FixedLenFeature([1], tf.int64)

    def parse(serialized):
        record = {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_example(serialized, spec).items()}
        packed = {
            "token_ids": record["input_ids"],
            "padding_mask": record["input_mask"],
            "segment_ids": record["segment_ids"],
        }
        if not with_pairs:  # unused
            return packed, tf.zeros_like(record["input_ids"][:, 0])
        return packed, record[_LABELS][:, 0]

    batches = (
        tf.data.Dataset.from_tensor_slices(paths)
        .shuffle(len(paths), seed=seed)
        .interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(len(paths), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        .shuffle(shuffle_buffer_size, seed=seed)
        .batch(batch_size, drop_remainder=True)
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    )
    masker = MaskedLMMasker(
        vocabulary,
        max_predictions_per_seq=max_predictions_per_seq,
        mask_rate=mask_rate,
        whole_word_masking=whole_word_masking,
        max_ngram=max_ngram,
    )
    return masked_training_batches(batches, masker, seed, with_pairs)
