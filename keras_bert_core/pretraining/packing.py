"""Sequence packing: several short documents in one fixed-length training row.

Padded to `seq_length`, a corpus of short documents spends most of every training step on
padding. Packing fills each row with whole documents instead. `padding_mask` then holds
each token's document id (1, 2, 3... along the row, 0 at padding), which `BertEncoder`
reads to keep attention inside each document and to restart positions at each, so a
packed row computes what its documents would compute in separate rows.

Packing sits between tokenization and masking: documents come in with their special
tokens (`[CLS] ... [SEP]`, as `BertPacker` makes them), and `MaskedLMMasker` masks the
packed rows (it selects only where `padding_mask > 0`, whatever the document id).
"""

import numpy as np
import tensorflow as tf

from keras_bert_core.pretraining.pairs import sentence_pairs

_NAMES = ("token_ids", "segment_ids", "padding_mask")


class _Row:
    """One row being filled: its documents' ids and segments, and the room left."""

    def __init__(self, seq_length):
        self.token_ids = np.zeros(seq_length, np.int32)
        self.segment_ids = np.zeros(seq_length, np.int32)
        self.padding_mask = np.zeros(seq_length, np.int32)
        self.length = 0
        self.documents = 0

    def add(self, token_ids, segment_ids):
        end = self.length + len(token_ids)
        self.documents += 1
        self.token_ids[self.length:end] = token_ids
        self.segment_ids[self.length:end] = segment_ids
        self.padding_mask[self.length:end] = self.documents
        self.length = end

    def arrays(self):
        return {name: getattr(self, name) for name in _NAMES}


def _document(item, index, seq_length):
    """`(token_ids, segment_ids)` as int32 arrays from an id sequence or such a pair."""
    is_pair = isinstance(item, tuple) and len(item) == 2 and np.ndim(item[0]) == 1
    token_ids, segment_ids = item if is_pair else (item, None)
    token_ids = np.asarray(token_ids, np.int32)
    segment_ids = (np.zeros_like(token_ids) if segment_ids is None
                   else np.asarray(segment_ids, np.int32))
    if token_ids.ndim != 1 or not 0 < len(token_ids) <= seq_length:
        raise ValueError(f"sequence {index} has shape {token_ids.shape}; each must be a 1-D "
                         f"sequence of 1 to seq_length={seq_length} ids (truncate it first)")
    if segment_ids.shape != token_ids.shape:
        raise ValueError(f"sequence {index} has {len(token_ids)} token ids but segment ids "
                         f"of shape {segment_ids.shape}")
    return token_ids, segment_ids


def pack_sequences(sequences, seq_length, max_open_rows=64):
    """Packs id sequences into rows of `seq_length`, greedy first fit, in a single pass.

    Each sequence goes into the first open row with room for all of it (sequences are
    never split); when none has room a new row opens. At most `max_open_rows` rows are
    open at once, so a stream of any length packs in bounded memory: when one more is
    needed, the fullest open row is emitted first. A row is emitted at once when full.

    Args:
        sequences: an iterable of 1-D int sequences (lists, numpy arrays, tensors), each a
            whole document with its special tokens, at most `seq_length` long; or of pairs
            `(token_ids, segment_ids)` of equal length.
        seq_length: the row length.
        max_open_rows: rows kept open for later sequences to fill; more packs tighter.

    Yields:
        dicts of int32 numpy arrays `[seq_length]`: `token_ids`, `segment_ids` (0 where a
        sequence gave none) and `padding_mask`, the document id of every token (1, 2, 3...
        in the row's order) and 0 at padding.

    Raises:
        ValueError: naming the first sequence that is empty, not 1-D, longer than
            `seq_length`, or whose segment ids do not match its ids.

    Example:
    >>> rows = list(pack_sequences([[2, 7, 3], [2, 8, 9, 3], [2, 5, 3]], seq_length=8))
    >>> [row["token_ids"].tolist() for row in rows]
    [[2, 7, 3, 2, 8, 9, 3, 0], [2, 5, 3, 0, 0, 0, 0, 0]]
    >>> rows[0]["padding_mask"].tolist()
    [1, 1, 1, 2, 2, 2, 2, 0]
    """
    if max_open_rows < 1:
        raise ValueError(f"max_open_rows must be at least 1, got {max_open_rows}")
    open_rows = []
    for index, item in enumerate(sequences):
        token_ids, segment_ids = _document(item, index, seq_length)
        row = next((r for r in open_rows if seq_length - r.length >= len(token_ids)), None)
        if row is None:
            if len(open_rows) == max_open_rows:
                fullest = max(open_rows, key=lambda r: r.length)
                open_rows.remove(fullest)
                yield fullest.arrays()
            row = _Row(seq_length)
            open_rows.append(row)
        row.add(token_ids, segment_ids)
        if row.length == seq_length:
            open_rows.remove(row)
            yield row.arrays()
    for row in open_rows:
        yield row.arrays()


def packed_dataset(sequences, seq_length, batch_size, masker=None, max_open_rows=64, seed=None):
    """A `tf.data.Dataset` of packed rows, batched, optionally masked for `fit`.

    Rows come from `pack_sequences`, batched with the remainder dropped (static shapes).
    With a `masker`, every batch gets fresh masks (new ones each epoch, the same ones for
    a `seed`) and the dataset yields `(x, y, sample_weight)` for `BertPretrainer.fit`.
    Next-sentence prediction does not apply to packed rows: train them with
    `BertPretrainer(encoder, next_sentence=False)` (masked LM only, as RoBERTa trains). A
    pretrainer with the next-sentence head gets next-sentence targets of 0 with weights of
    0, so its masked LM trains alone too (its `nsp_accuracy` is then meaningless).

    Args:
        sequences: as for `pack_sequences`; a list or any re-iterable (each epoch packs it
            again), e.g. a `tf.data.Dataset` of 1-D id tensors.
        seq_length: the row length.
        batch_size: rows per batch.
        masker: a `MaskedLMMasker`, or None for unmasked batches of the three encoder
            inputs.
        max_open_rows: as for `pack_sequences`.
        seed: int or None, seeds the masks.

    Returns:
        Without a masker, batches of dicts `token_ids`, `segment_ids`, `padding_mask`,
        int32 `[batch_size, seq_length]`. With one, `(x, y, sample_weight)`: `x` those
        three (ids masked) and `masked_positions`; `y = {"mlm": masked_ids, "nsp": 0s}`;
        `sample_weight = {"mlm": masked_weights, "nsp": 0s}`.

    Example:
    >>> docs = [[2, 7, 3], [2, 8, 9, 3], [2, 5, 3], [2, 6, 6, 3]]
    >>> batch = next(iter(packed_dataset(docs, seq_length=8, batch_size=2)))
    >>> batch["padding_mask"].numpy().tolist()
    [[1, 1, 1, 2, 2, 2, 2, 0], [1, 1, 1, 2, 2, 2, 2, 0]]
    """
    spec = tf.TensorSpec([seq_length], tf.int32)
    rows = tf.data.Dataset.from_generator(
        lambda: pack_sequences(sequences, seq_length, max_open_rows),
        output_signature={name: spec for name in _NAMES})
    batches = rows.batch(batch_size, drop_remainder=True)
    if masker is None:
        return batches

    def arrange(batch, mask_seed):
        masked = masker(batch["token_ids"], batch["padding_mask"], seed=mask_seed)
        x = {**batch, "token_ids": masked["token_ids"],
             "masked_positions": masked["masked_positions"]}
        no_sentence_pairs = tf.zeros([batch_size], tf.int32)
        y = {"mlm": masked["masked_ids"], "nsp": no_sentence_pairs}
        weights = {"mlm": masked["masked_weights"], "nsp": tf.zeros([batch_size], tf.float32)}
        return x, y, weights

    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    return (tf.data.Dataset.zip(batches, seeds)
            .map(arrange, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))


def packed_corpus_dataset(files, tokenizer, seq_length, batch_size, masker, seed=None):
    """Masked-LM batches `(x, y, sample_weight)` of packed rows from text files (`kbc
    pretrain --pack`): the corpus cut into documents (a long one into chunks of consecutive
    sentences, as masked-LM-only rows are cut), each `[CLS] ... [SEP]` (`<s> ... </s>`),
    several to a row (`packed_dataset`); `padding_mask` holds each token's document id.
    Packed rows have no sentence pairs, so `y` and `sample_weight` hold `"mlm"` alone (for
    `BertPretrainer(encoder, next_sentence=False)`).

    Args:
        files: text files or glob patterns, one sentence a line, documents apart by blank
            lines (as `pretraining.pairs.sentence_pairs` reads them).
        tokenizer: the tokenizer layer (`BertPreprocessor(...).tokenizer`).
        seq_length, batch_size: the rows' length and count per batch.
        masker: the `MaskedLMMasker` that masks each batch.
        seed: int or None, seeds the document order and the masks.

    Raises:
        ValueError: an empty file or a sequence length too short for any text.
    """
    chunks = sentence_pairs(files, tokenizer, seq_length, short_seq_prob=0.1, seed=seed,
                            document_buffer_size=1000, window_size=32, pair_task=None)
    start, end = tokenizer.cls_id, tokenizer.sep_id
    documents = chunks.shuffle(10_000, seed=seed).map(
        lambda tokens, _, __: tf.concat([[start], tf.cast(tokens, tf.int32), [end]], 0))
    batches = packed_dataset(documents, seq_length, batch_size, masker, seed=seed)
    return batches.map(lambda x, y, weights: (x, {"mlm": y["mlm"]}, {"mlm": weights["mlm"]}))
