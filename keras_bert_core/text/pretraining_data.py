"""BERT pretraining data (masked LM + next sentence prediction, or masked LM alone) from
raw text, in tf.data.

Input is the google-research format: UTF-8 text files with one sentence per line and a
blank line between documents. Sentence pairs are built as google-research's
`create_pretraining_data.py` builds them, but in the TensorFlow graph and streaming: files
are read lazily, and the "random next" segment is drawn from a bounded window of shuffled
documents instead of the whole corpus held in memory. Masking is dynamic: it is drawn per
batch, so it changes every epoch, both for `pretraining_dataset` and for TFRecords written
by `write_pretraining_tfrecords` (they store unmasked pairs).

Every dataset here yields `(x, y, sample_weight)`, ready for `keras.Model.fit` on a model
with outputs named "mlm" and "nsp" (`BertPretrainer`):

- `x["token_ids"]`, `x["segment_ids"]`, `x["padding_mask"]`: int32 `[B, seq_length]`,
  token ids with the masking applied.
- `x["masked_positions"]`: int32 `[B, P]`, where the MLM head gathers.
- `y["mlm"]`: int32 `[B, P]`, the original ids at `masked_positions`.
- `y["nsp"]`: int32 `[B]`, 0 when segment B continues segment A, 1 when B is random
  (google-research's `next_sentence_labels`).
- `sample_weight["mlm"]`: float32 `[B, P]`, 1.0 for real predictions, 0.0 for padding slots.
- `sample_weight["nsp"]`: float32 `[B]`, all 1.0 (Keras wants a weight per output once any
  output has one).

With `next_sentence=False` (masked LM alone, for `BertPretrainer(next_sentence=False)`),
each row is one segment, `[CLS] sentences [SEP]`: consecutive sentences of one document,
up to the row's length; `y` and `sample_weight` then hold "mlm" only.

`B = batch_size` and `P = max_predictions_per_seq` are static: batches drop the remainder.
"""

import contextlib
import os

import tensorflow as tf

from keras_bert_core.text.masking import MaskedLMMasker
from keras_bert_core.text.packer import BertPacker

# Feature names of google-research's pretraining TFRecords, minus the masked-LM fields.
_RECORD_FEATURES = ("input_ids", "input_mask", "segment_ids")


def expand_text_files(files):
    """Expands paths and globs to a list of files, each checked to hold a sentence.

    Args:
        files: a path or glob, or a list of them.

    Returns:
        The list of file paths, each pattern's matches sorted.

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: a file is empty or holds only blank lines.

    Example:

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "w").write("One sentence.\\n")
    >>> expand_text_files(path) == [path]
    True
    """
    paths = _glob(files)
    for path in paths:
        _check_has_sentence(path)
    return paths


def _glob(files):
    patterns = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    paths = []
    for pattern in map(os.fspath, patterns):
        matches = [pattern] if tf.io.gfile.exists(pattern) else tf.io.gfile.glob(pattern)
        if not matches:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        paths += sorted(matches)
    return paths


# Bytes of a file read to check that it is UTF-8 text: enough to catch a file in another
# encoding without reading a large corpus twice (later invalid bytes are dropped, as the
# reference tokenizer drops them).
_ENCODING_CHECK_BYTES = 1 << 20


def _check_has_sentence(path):
    if tf.io.gfile.isdir(path):
        raise ValueError(f"Input {path!r} is a directory, not a text file.")
    with tf.io.gfile.GFile(path, "rb") as f:
        head = f.read(_ENCODING_CHECK_BYTES)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 3:  # not a character cut by the end of the head
            line = head.count(b"\n", 0, error.start) + 1
            column = error.start - (head.rfind(b"\n", 0, error.start) + 1) + 1
            raise ValueError(
                f"Input file {path!r} is not UTF-8 text: line {line}, column {column} holds "
                f"the byte 0x{head[error.start]:02x}; convert the file to UTF-8 (e.g. "
                "`iconv -f latin1 -t utf-8`).") from None
        text = head[:error.start].decode("utf-8")
    if text.strip():
        return
    problem = "is empty" if not head else "has no sentences, only blank lines"
    raise ValueError(f"Input file {path!r} {problem}.")


def _read_documents(path, block_lines=4096):
    """A dataset of one file's documents, each a 1-D string tensor of its sentences.

    Lines are read in blocks; the unfinished document at the end of a block is carried to
    the next, so memory holds one block plus one document.
    """

    def split_block(carry, block):
        lines = tf.concat([carry, block], axis=0)
        blank = tf.strings.length(tf.strings.strip(lines)) == 0
        # Lines up to the last blank line form whole documents.
        num_done = tf.reduce_max(tf.where(blank, tf.range(1, tf.size(lines) + 1), 0))
        done_blank = blank[:num_done]
        kept = ~done_blank
        docs = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(lines[:num_done], kept),
            tf.boolean_mask(tf.cumsum(tf.cast(done_blank, tf.int64)), kept),
            nrows=tf.reduce_sum(tf.cast(done_blank, tf.int64)),
        )
        return lines[num_done:], tf.ragged.boolean_mask(docs, docs.row_lengths() > 0)

    # A final blank line closes the last document.
    lines = tf.data.TextLineDataset(path).concatenate(tf.data.Dataset.from_tensors(""))
    return lines.batch(block_lines).scan(tf.constant([], tf.string), split_block).unbatch()


def _seed_stream(seed, salt):
    """Per-element stateless seeds: the same sequence for a seed, new values each epoch."""
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    return seeds.map(lambda s: tf.random.experimental.stateless_fold_in(s, salt))


def _random_int(u, low, high):
    """Maps a uniform [0, 1) float to an int64 in [low, high], inclusive."""
    span = high - low + 1
    return low + tf.minimum(tf.cast(u * tf.cast(span, tf.float32), tf.int64), span - 1)


def _pair_instances(docs, seed, max_num_tokens, short_seq_prob, next_sentence=True):
    """Sentence-pair instances from a window of tokenized documents.

    Follows google-research's `create_instances_from_document`: consecutive sentences
    fill a chunk up to a target length (`max_num_tokens`, or with probability
    `short_seq_prob` a random length in [2, max_num_tokens]); the chunk splits at a
    random sentence into A and B; with probability 1/2 (always for a one-sentence chunk)
    B is instead a run of sentences from a random other document of the window, and the
    unused sentences go back to the document. The longer side is then trimmed one token
    at a time, from the front or the back at random, until the pair fits. (google-research
    draws the target length once per document; here each chunk draws its own.)

    All documents advance together: each loop step makes the next instance of every
    document that has sentences left. With `next_sentence=False` the whole chunk is A and
    B is empty (trimming then cuts A alone).

    Args:
        docs: int ragged `[K, (sentences), (tokens)]`, no empty documents or sentences.
        seed: int64 `[2]` stateless seed.
        max_num_tokens: int, the room for A + B.
        short_seq_prob: float.
        next_sentence: bool, whether to split chunks into pairs.

    Returns:
        `(tokens_a, tokens_b, labels)`: ragged `[M, (tokens)]` twice, int32 `[M]`.
    """
    offsets = docs.values.row_splits  # Where each sentence starts in the flat tokens.
    doc_start, doc_end = docs.row_splits[:-1], docs.row_splits[1:]  # In sentences.
    num_docs = docs.nrows()
    doc = tf.range(num_docs)

    def sentences_to_reach(start, stop, target):
        """Sentences from `start` it takes to reach `target` tokens: at least 1, all if never."""
        reach = tf.searchsorted(offsets, tf.gather(offsets, start) + target, out_type=tf.int64)
        return tf.clip_by_value(reach - start, 1, stop - start)

    def make_instances(step, position, instances):
        active = position < doc_end
        i = tf.minimum(position, doc_end - 1)
        uniform_seed, binomial_seed = tf.unstack(
            tf.random.experimental.stateless_split(
                tf.random.experimental.stateless_fold_in(seed, step), 2
            )
        )
        u = tf.random.stateless_uniform([6, num_docs], uniform_seed)
        target = tf.where(
            u[0] < short_seq_prob, _random_int(u[1], 2, max_num_tokens), max_num_tokens
        )
        chunk = sentences_to_reach(i, doc_end, target)
        if next_sentence:
            num_a = tf.where(chunk > 1, _random_int(u[2], 1, chunk - 1), 1)
            is_random = (chunk == 1) | (u[3] < 0.5)
        else:  # B, from a_end to the chunk's end, is empty
            num_a, is_random = chunk, tf.zeros_like(chunk, tf.bool)
        a_start, a_end = tf.gather(offsets, i), tf.gather(offsets, i + num_a)

        # A window of one document can only draw from itself, as google-research falls
        # back to when it finds no other document.
        other = _random_int(u[4], 0, num_docs - 2)
        other = tf.where(num_docs > 1, other + tf.cast(other >= doc, tf.int64), doc)
        first, stop = tf.gather(doc_start, other), tf.gather(doc_end, other)
        start = first + _random_int(u[5], 0, stop - first - 1)
        num_b = sentences_to_reach(start, stop, target - (a_end - a_start))
        b_start = tf.where(is_random, tf.gather(offsets, start), a_end)
        b_end = tf.gather(offsets, tf.where(is_random, start + num_b, i + chunk))

        # Trimming the longer side one token at a time (ties trim B) removes, in total:
        len_a, len_b = a_end - a_start, b_end - b_start
        excess = tf.maximum(len_a + len_b - max_num_tokens, 0)
        uneven = tf.minimum(excess, tf.abs(len_a - len_b))
        even = excess - uneven
        a_longer = tf.cast(len_a > len_b, tf.int64)
        cuts = tf.stack([a_longer * uneven + even // 2, (1 - a_longer) * uneven + (even + 1) // 2])
        # Each removed token comes from the front with probability 1/2.
        front = tf.cast(
            tf.random.stateless_binomial(
                [2, num_docs], binomial_seed, tf.cast(cuts, tf.float32), 0.5
            ),
            tf.int64,
        )
        back = cuts - front
        columns = [
            a_start + front[0],
            a_end - back[0],
            b_start + front[1],
            b_end - back[1],
            tf.cast(is_random, tf.int64),
        ]
        instances = instances.write(
            tf.cast(step, tf.int32), tf.boolean_mask(tf.stack(columns, axis=1), active)
        )
        advance = tf.where(is_random, num_a, chunk)
        return step + 1, tf.where(active, i + advance, position), instances

    instances = tf.TensorArray(
        tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None, 5]
    )
    _, _, instances = tf.while_loop(
        lambda step, position, instances: tf.reduce_any(position < doc_end),
        make_instances,
        (tf.constant(0, tf.int64), doc_start, instances),
    )
    instances = instances.concat()
    tokens = docs.flat_values
    tokens_a = tf.gather(tokens, tf.ragged.range(instances[:, 0], instances[:, 1]))
    tokens_b = tf.gather(tokens, tf.ragged.range(instances[:, 2], instances[:, 3]))
    return tokens_a, tokens_b, tf.cast(instances[:, 4], tf.int32)


def _sentence_pairs(
    files, tokenizer, seq_length, short_seq_prob, seed, document_buffer_size, window_size,
    next_sentence,
):
    """A stream of `(tokens_a, tokens_b, next_sentence_label)`, new pairs each epoch (B
    empty and the label 0 without `next_sentence`)."""
    special_tokens = 3 if next_sentence else 2
    if seq_length < special_tokens + 2:
        raise ValueError(f"seq_length must be at least {special_tokens + 2}, got {seq_length}.")
    files = expand_text_files(files)
    docs = (
        tf.data.Dataset.from_tensor_slices(files)
        .shuffle(len(files), seed=seed)
        .interleave(
            _read_documents,
            cycle_length=min(len(files), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        .shuffle(document_buffer_size, seed=seed)
        .ragged_batch(window_size)
    )

    def window_pairs(window, window_seed):
        pieces = tokenizer(window.flat_values).with_row_splits_dtype(tf.int64)
        docs = window.with_values(pieces)
        docs = tf.ragged.boolean_mask(docs, docs.row_lengths(axis=2) > 0)
        docs = tf.ragged.boolean_mask(docs, docs.row_lengths() > 0)
        return _pair_instances(docs, window_seed, seq_length - special_tokens, short_seq_prob,
                               next_sentence)

    pairs = tf.data.Dataset.zip(docs, _seed_stream(seed, 0)).map(
        window_pairs, num_parallel_calls=tf.data.AUTOTUNE
    )
    return pairs.unbatch()


def _packed_batches(pairs, tokenizer, seq_length, batch_size, drop_remainder, next_sentence):
    """Batches of `(packed_inputs, next_sentence_labels)`, int32 `[B, seq_length]` / `[B]`:
    `[CLS] A [SEP] B [SEP]`, or `[CLS] A [SEP]` without `next_sentence`."""
    packer = BertPacker(seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)

    def pack(tokens_a, tokens_b, labels):
        return packer((tokens_a, tokens_b) if next_sentence else tokens_a), labels

    return pairs.ragged_batch(batch_size, drop_remainder=drop_remainder).map(
        pack, num_parallel_calls=tf.data.AUTOTUNE
    )


def _masked_training_batches(batches, masker, seed, next_sentence):
    """Applies fresh masks per batch and arranges `(x, y, sample_weight)` for `fit`."""

    def arrange(batch, mask_seed):
        packed, labels = batch
        masked = masker(packed["token_ids"], packed["padding_mask"], seed=mask_seed)
        x = {
            "token_ids": masked["token_ids"],
            "segment_ids": packed["segment_ids"],
            "padding_mask": packed["padding_mask"],
            "masked_positions": masked["masked_positions"],
        }
        y = {"mlm": masked["masked_ids"]}
        sample_weight = {"mlm": masked["masked_weights"]}
        if next_sentence:
            y["nsp"] = labels
            sample_weight["nsp"] = tf.ones_like(labels, tf.float32)
        return x, y, sample_weight

    # Under a multi-worker strategy every worker reads all the input and keeps its share of
    # each batch: sharding by file (TensorFlow's choice for file sources) fails with fewer
    # files than workers.
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    return (
        tf.data.Dataset.zip(batches, _seed_stream(seed, 1))
        .map(arrange, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
        .with_options(options)
    )


def pretraining_dataset(
    files,
    tokenizer,
    seq_length=128,
    max_predictions_per_seq=20,
    batch_size=32,
    seed=None,
    short_seq_prob=0.1,
    whole_word_masking=False,
    mask_rate=0.15,
    document_buffer_size=1000,
    window_size=32,
    shuffle_buffer_size=10000,
    next_sentence=True,
):
    """A streaming masked-LM + next-sentence dataset straight from raw text files.

    Files are read lazily, interleaved, and their documents shuffled through a buffer of
    `document_buffer_size`; consecutive runs of `window_size` documents are tokenized
    together and each document's "random next" segments come from another document of
    its window. Pairs are shuffled through `shuffle_buffer_size`, batched (remainder
    dropped), packed as `[CLS] A [SEP] B [SEP]` and masked. With a `seed` the whole
    stream is reproducible (TensorFlow combines op seeds with its global seed, so keep
    that fixed too), and each epoch (each new iterator) still draws new pairs and masks.
    The dataset ends after one pass; add `.repeat()` for more. Under a multi-worker
    strategy every worker reads all the files and keeps its share of each batch.

    Args:
        files: a path or glob, or a list of them, of text files: one sentence per line,
            a blank line between documents.
        tokenizer: the package's `BertTokenizer` (strings `[N]` -> ragged int32 ids).
        seq_length: int, the packed length, `[CLS]` and two `[SEP]` included.
        max_predictions_per_seq: int, `P`, the masked-LM slots per sequence.
        batch_size: int.
        seed: int or None.
        short_seq_prob: float, probability of a shorter random target length (keeps the
            model used to short inputs).
        whole_word_masking: bool, mask all pieces of a word together.
        mask_rate: float, fraction of tokens to predict.
        document_buffer_size: int, documents held for shuffling.
        window_size: int, documents that share a tokenizer call and random-next draws.
        shuffle_buffer_size: int, sentence pairs held for shuffling.
        next_sentence: bool; `False` makes masked-LM-only rows, one segment of consecutive
            sentences each, without next-sentence labels.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as described in this module's
        docstring.

    Example:

    >>> tokenizer = kbc.BertTokenizer("vocab.txt", lower_case=True)  # doctest: +SKIP
    >>> ds = pretraining_dataset("corpus/*.txt", tokenizer, seq_length=128,
    ...                          batch_size=32, seed=1)  # doctest: +SKIP
    >>> pretrainer.fit(ds.repeat(), steps_per_epoch=1000, epochs=10)  # doctest: +SKIP
    """
    pairs = _sentence_pairs(
        files, tokenizer, seq_length, short_seq_prob, seed, document_buffer_size, window_size,
        next_sentence,
    ).shuffle(shuffle_buffer_size, seed=seed)
    masker = MaskedLMMasker(
        tokenizer,
        max_predictions_per_seq=max_predictions_per_seq,
        mask_rate=mask_rate,
        whole_word_masking=whole_word_masking,
    )
    batches = _packed_batches(pairs, tokenizer, seq_length, batch_size, drop_remainder=True,
                              next_sentence=next_sentence)
    return _masked_training_batches(batches, masker, seed, next_sentence)


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
    next_sentence=True,
):
    """Writes unmasked sentence pairs to sharded TFRecord files, for `read_pretraining_tfrecords`.

    Pairs are made as in `pretraining_dataset`, `dupe_factor` times with fresh random
    splits, and written round-robin to the shards. Each `tf.train.Example` holds int64
    features `input_ids`, `input_mask`, `segment_ids` (`[seq_length]`) and
    `next_sentence_labels` (`[1]`; not with `next_sentence=False`), named as in
    google-research's files; the masked-LM fields are left out, so masking stays dynamic
    at read time.

    Args:
        files: a path or glob, or a list of them, of one-sentence-per-line text files.
        tokenizer: the package's `BertTokenizer`.
        output_prefix: path prefix; shards are `{prefix}-00000-of-00004.tfrecord`, ...
        seq_length: int, the packed length.
        num_shards: int.
        dupe_factor: int, passes over the corpus, each with different pairs.
        seed: int or None.
        short_seq_prob: float, as in `pretraining_dataset`.
        document_buffer_size: int, as in `pretraining_dataset`.
        window_size: int, as in `pretraining_dataset`.
        shuffle_buffer_size: int, as in `pretraining_dataset`.
        next_sentence: bool, as in `pretraining_dataset`.

    Returns:
        The list of shard paths.

    Example:

    >>> paths = write_pretraining_tfrecords("corpus/*.txt", tokenizer, "data/wiki",
    ...                                     num_shards=4, dupe_factor=5)  # doctest: +SKIP
    """
    pairs = (
        _sentence_pairs(
            files, tokenizer, seq_length, short_seq_prob, seed, document_buffer_size, window_size,
            next_sentence,
        )
        .repeat(dupe_factor)
        .shuffle(shuffle_buffer_size, seed=seed)
    )
    batches = _packed_batches(pairs, tokenizer, seq_length, batch_size=256, drop_remainder=False,
                              next_sentence=next_sentence)
    paths = [f"{output_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    if os.path.dirname(output_prefix):
        tf.io.gfile.makedirs(os.path.dirname(output_prefix))
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(tf.io.TFRecordWriter(path)) for path in paths]
        for i, example in enumerate(_serialized_examples(batches, next_sentence)):
            writers[i % num_shards].write(example)
    return paths


def _serialized_examples(batches, next_sentence):
    """`tf.train.Example` bytes of every packed pair, in google-research's feature names."""
    for packed, labels in batches.as_numpy_iterator():
        columns = [packed["token_ids"], packed["padding_mask"], packed["segment_ids"]]
        for row, label in enumerate(labels):
            feature = {
                name: tf.train.Feature(int64_list=tf.train.Int64List(value=column[row]))
                for name, column in zip(_RECORD_FEATURES, columns, strict=True)
            }
            if next_sentence:
                feature["next_sentence_labels"] = tf.train.Feature(
                    int64_list=tf.train.Int64List(value=[label])
                )
            yield tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def read_pretraining_tfrecords(
    files,
    vocabulary,
    batch_size=32,
    max_predictions_per_seq=20,
    seed=None,
    whole_word_masking=False,
    mask_rate=0.15,
    shuffle_buffer_size=10000,
):
    """Reads `write_pretraining_tfrecords` shards and masks them afresh per batch.

    Args:
        files: a path or glob, or a list of them, of TFRecord shards.
        vocabulary: the tokenizer used for writing, or its vocabulary (list or path);
            masking needs the `[MASK]` id, the special tokens and the `##` pieces.
        batch_size: int.
        max_predictions_per_seq: int, `P`.
        seed: int or None; shard order, record shuffling and masks follow it.
        whole_word_masking: bool.
        mask_rate: float.
        shuffle_buffer_size: int, records held for shuffling.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as described in this module's
        docstring, with the sequence length the files were written with, and "nsp" targets
        where the files hold next-sentence labels (not if written with
        `next_sentence=False`). One pass; add
        `.repeat()` for more. Under a multi-worker strategy every worker reads all the
        shards and keeps its share of each batch.

    Example:

    >>> ds = read_pretraining_tfrecords("data/wiki-*.tfrecord", tokenizer,
    ...                                 batch_size=32, seed=1)  # doctest: +SKIP
    """
    paths = _glob(files)
    first = next(iter(tf.data.TFRecordDataset(paths).take(1)), None)
    if first is None:
        raise ValueError(f"No records in {paths}.")
    features = tf.train.Example.FromString(first.numpy()).features.feature
    seq_length = len(features["input_ids"].int64_list.value)
    next_sentence = "next_sentence_labels" in features
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in _RECORD_FEATURES}
    if next_sentence:
        spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)

    def parse(serialized):
        record = {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_example(serialized, spec).items()}
        packed = {
            "token_ids": record["input_ids"],
            "padding_mask": record["input_mask"],
            "segment_ids": record["segment_ids"],
        }
        if not next_sentence:  # unused
            return packed, tf.zeros_like(record["input_ids"][:, 0])
        return packed, record["next_sentence_labels"][:, 0]

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
    )
    return _masked_training_batches(batches, masker, seed, next_sentence)
