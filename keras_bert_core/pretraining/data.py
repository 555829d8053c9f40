"""BERT pretraining data (masked LM + next sentence prediction, masked LM + sentence order
prediction as ALBERT trains, or masked LM alone) from raw text, in tf.data.

Input is the google-research format (`pretraining_corpus`): UTF-8 text files with one
sentence per line and a blank line between documents. Sentence pairs are built as
google-research's `create_pretraining_data.py` builds them, in the graph and streaming
(`pretraining_pairs`); `pretraining_tfrecords` stores them. Masking is dynamic: it is drawn
per batch, so it changes every epoch, both for `pretraining_dataset` and for TFRecords
(they store unmasked pairs). `pretraining_packing` packs short documents into full rows.

Every pretraining dataset yields `(x, y, sample_weight)`, ready for `keras.Model.fit` on a model
with outputs named "mlm" and "nsp" (`BertPretrainer`):

- `x["token_ids"]`, `x["segment_ids"]`, `x["padding_mask"]`: int32 `[B, seq_length]`,
  token ids with the masking applied.
- `x["masked_positions"]`: int32 `[B, P]`, where the MLM head gathers.
- `y["mlm"]`: int32 `[B, P]`, the original ids at `masked_positions`.
- `y["nsp"]`: int32 `[B]`, the pair label (google-research's `next_sentence_labels`):
  for next-sentence prediction 0 when segment B continues segment A, 1 when B is random;
  for sentence-order prediction (`pair_task="sentence_order"`), where B always continues
  A before the two may swap, 0 in the original order and 1 swapped (ALBERT's label, and
  Hugging Face's `sentence_order_label`). Both train the same two-way head.
- `sample_weight["mlm"]`: float32 `[B, P]`, 1.0 for real predictions, 0.0 for padding slots.
- `sample_weight["nsp"]`: float32 `[B]`, all 1.0 (Keras wants a weight per output once any
  output has one).

With `pair_task=None` (masked LM alone, for `BertPretrainer(next_sentence=False)`),
each row is one segment, `[CLS] sentences [SEP]`: consecutive sentences of one document,
up to the row's length; `y` and `sample_weight` then hold "mlm" only.

`B = batch_size` and `P = max_predictions_per_seq` are static: batches drop the remainder.
"""

import tensorflow as tf

from keras_bert_core.pretraining.masking import MaskedLMMasker
from keras_bert_core.pretraining.pairs import (
    resolve_pair_task,
    seed_stream,
    sentence_pairs,
)
from keras_bert_core.text.packer import BertPacker
from keras_bert_core.text.preprocessor import packing_of


def family_packing(tokenizer):
    """`BertPacker`'s pair options for `tokenizer`'s family, as `BertPreprocessor` packs:
    RoBERTa's byte-level BPE `<s> A </s></s> B </s>` with one token type, the others
    `[CLS] A [SEP] B [SEP]`."""
    return packing_of(tokenizer)


def pairs_seq_length(tokenizer, seq_length, pair_task):
    """The length `sentence_pairs` fills (it leaves room for `[CLS] A [SEP] B [SEP]`'s
    three special tokens): one less for RoBERTa's pairs, which have a fourth (`</s></s>`)."""
    if pair_task is None:
        return seq_length
    return seq_length - (family_packing(tokenizer)["pair_separators"] - 1)


def shuffled_pairs(files, tokenizer, seq_length, pair_task, seed, short_seq_prob,
                   document_buffer_size, window_size, shuffle_buffer_size, dupe_factor=1):
    """The shuffled sentence pairs (single segments for `pair_task=None`) of `files` for rows
    of `seq_length`, `dupe_factor` passes over the corpus: what `pretraining_dataset` masks
    and `write_pretraining_tfrecords` writes (the arguments are theirs)."""
    pairs = sentence_pairs(
        files, tokenizer, pairs_seq_length(tokenizer, seq_length, pair_task), short_seq_prob,
        seed, document_buffer_size, window_size, pair_task,
    )
    if dupe_factor != 1:
        pairs = pairs.repeat(dupe_factor)
    return pairs.shuffle(shuffle_buffer_size, seed=seed)


def packed_batches(pairs, tokenizer, seq_length, batch_size, drop_remainder, with_pairs):
    """Batches of `(packed_inputs, pair_labels)`, int32 `[B, seq_length]` / `[B]`:
    `[CLS] A [SEP] B [SEP]` (RoBERTa: `<s> A </s></s> B </s>`), or `[CLS] A [SEP]` without
    `with_pairs`, with the special ids of `tokenizer` (WordPiece, BPE or SentencePiece)."""
    packer = BertPacker(seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id,
                        **family_packing(tokenizer))

    def pack(tokens_a, tokens_b, labels):
        return packer((tokens_a, tokens_b) if with_pairs else tokens_a), labels

    return pairs.ragged_batch(batch_size, drop_remainder=drop_remainder).map(
        pack, num_parallel_calls=tf.data.AUTOTUNE
    )


def masked_training_batches(batches, masker, seed, with_pairs):
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
        if with_pairs:
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
        tf.data.Dataset.zip(batches, seed_stream(seed, 1))
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
    pair_task="next_sentence",
    max_ngram=1,
    next_sentence=None,
):
    """A streaming masked-LM + next-sentence (or sentence-order) dataset straight from raw
    text files.

    Files are read lazily, interleaved, and their documents shuffled through a buffer of
    `document_buffer_size`; consecutive runs of `window_size` documents are tokenized
    together and each document's "random next" segments come from another document of
    its window. Pairs are shuffled through `shuffle_buffer_size`, batched (remainder
    dropped), packed as `[CLS] A [SEP] B [SEP]` (RoBERTa: `<s> A </s></s> B </s>`) and
    masked. With a `seed` the whole
    stream is reproducible (TensorFlow combines op seeds with its global seed, so keep
    that fixed too), and each epoch (each new iterator) still draws new pairs and masks.
    The dataset ends after one pass; add `.repeat()` for more. Under a multi-worker
    strategy every worker reads all the files and keeps its share of each batch.

    Args:
        files: a path or glob, or a list of them, of text files: one sentence per line,
            a blank line between documents.
        tokenizer: a tokenizer layer of the package (strings `[N]` -> ragged int32 ids):
            `BertTokenizer` (BERT, DistilBERT), `BytePairTokenizer` (RoBERTa) or
            `SentencePieceTokenizer` (ALBERT); rows are packed as its family packs them
            (`family_packing`) and masked with its special tokens and word markers.
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
        pair_task: "next_sentence" (BERT), "sentence_order" (ALBERT: B always continues A,
            and half the pairs are swapped), or None: masked-LM-only rows, one segment of
            consecutive sentences each, without pair labels.
        max_ngram: int, masks n-grams of up to this many words (of pieces without
            `whole_word_masking`), `p(n)` proportional to `1/n`; ALBERT uses 3. 1 masks
            single words (pieces).
        next_sentence: bool or None, the older form of `pair_task`: False is
            `pair_task=None`, True is "next_sentence".

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as described in this module's
        docstring.

    Example:

    >>> import tempfile
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("The fox runs.\\nThe fox sleeps.\\n\\nThe dog runs.\\n")
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "dog", "runs", "."]
    >>> ds = pretraining_dataset(f.name, BertTokenizer(vocab), seq_length=16,
    ...                          max_predictions_per_seq=2, batch_size=2, seed=1)
    >>> x, y, sample_weight = next(iter(ds))
    >>> x["token_ids"].shape.as_list(), y["mlm"].shape.as_list(), y["nsp"].shape.as_list()
    ([2, 16], [2, 2], [2])

    On a real corpus:

    >>> tokenizer = kbc.BertTokenizer("vocab.txt", lower_case=True)  # doctest: +SKIP
    >>> ds = pretraining_dataset("corpus/*.txt", tokenizer, seq_length=128,
    ...                          batch_size=32, seed=1)  # doctest: +SKIP
    >>> pretrainer.fit(ds.repeat(), steps_per_epoch=1000, epochs=10)  # doctest: +SKIP
    """
    pair_task = resolve_pair_task(pair_task, next_sentence)
    pairs = shuffled_pairs(files, tokenizer, seq_length, pair_task, seed, short_seq_prob,
                           document_buffer_size, window_size, shuffle_buffer_size)
    masker = MaskedLMMasker(
        tokenizer,
        max_predictions_per_seq=max_predictions_per_seq,
        mask_rate=mask_rate,
        whole_word_masking=whole_word_masking,
        max_ngram=max_ngram,
    )
    with_pairs = pair_task is not None
    batches = packed_batches(pairs, tokenizer, seq_length, batch_size, drop_remainder=True,
                             with_pairs=with_pairs)
    return masked_training_batches(batches, masker, seed, with_pairs)
