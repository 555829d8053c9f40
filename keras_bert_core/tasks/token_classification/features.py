"""Token classification features: words split into pieces, each word labeled at its first
piece (every other position gets -100, which the token classifier's loss ignores)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import tensorflow as tf

# The label the token classifier's loss and accuracy leave out: defined beside them.
from keras_bert_core.models.metrics import IGNORE_LABEL


@dataclasses.dataclass
class TaggingFeatures:
    """Fixed-length token rows for a token classifier, with word alignment.

    Args:
        inputs: dict of int32 `[num_sentences, seq_length]` `token_ids`, `segment_ids`,
            `padding_mask`.
        labels: int32 `[num_sentences, seq_length]`: the word's tag id at its first piece,
            -100 elsewhere (later pieces, `[CLS]`, `[SEP]`, padding); `None` if unlabeled.
        word_ids: int32 `[num_sentences, seq_length]`: the word index at each word's first
            piece, -1 elsewhere.
        num_words: int32 `[num_sentences]` words per sentence (including any cut off).

    Example (see `tagging_features`, which makes them):
    >>> from keras_bert_core.tasks.token_classification import TaggingData
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "love", "##lace"]
    >>> data = TaggingData([["Lovelace"]], [[0]], ["B-PER"])
    >>> features = tagging_features(data, BertTokenizer(vocab), seq_length=6)
    >>> features.word_ids[0].tolist(), features.num_words.tolist()
    ([-1, 0, -1, -1, -1, -1], [1])
    """

    inputs: dict
    labels: np.ndarray | None
    word_ids: np.ndarray
    num_words: np.ndarray

    def __len__(self):
        return len(self.num_words)

    def dataset(self, batch_size=32, training=False, shuffle_buffer=10_000, seed=None):
        """A `tf.data.Dataset` of `(inputs, labels)` batches (inputs only when unlabeled).

        Training shuffles and drops the last partial batch, so every batch has one static
        shape.
        """
        dataset = tf.data.Dataset.from_tensor_slices(
            self.inputs if self.labels is None else (self.inputs, self.labels))
        if training:
            dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        return dataset.batch(batch_size, drop_remainder=training).prefetch(tf.data.AUTOTUNE)


def tagging_features(data, tokenizer, seq_length=128):
    """Tokenizes word lists into `[CLS] pieces [SEP]` rows labeled at each word's first piece.

    A word the tokenizer drops entirely (e.g. a lone control character) becomes `[UNK]`, so
    every word keeps a position. Sentences longer than `seq_length - 2` pieces are cut (with a
    warning); their cut words have no position and `predictions_to_tags` tags them "O".

    Args:
        data: a `TaggingData`.
        tokenizer: one of the package's tokenizers.
        seq_length: tokens per row, `[CLS]` and `[SEP]` included.

    Returns:
        A `TaggingFeatures`.

    Example:
    >>> from keras_bert_core.tasks.token_classification import TaggingData
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "love", "##lace", "sang"]
    >>> data = TaggingData([["Ada", "Lovelace", "sang"]], [[1, 2, 0]], ["O", "B-PER", "I-PER"])
    >>> features = tagging_features(data, BertTokenizer(vocab), seq_length=8)
    >>> features.inputs["token_ids"][0].tolist()
    [2, 5, 6, 7, 8, 3, 0, 0]
    >>> features.labels[0].tolist()
    [-100, 1, 2, -100, 0, -100, -100, -100]
    """
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    # Words after the first are tokenized with the space before them, as in the sentence
    # (byte-level BPE marks word starts by it; WordPiece and SentencePiece drop it).
    words = [word if index == 0 else " " + word
             for sentence in data.sentences for index, word in enumerate(sentence)]
    pieces_per_word = iter(tokenizer(words).to_list() if words else [])
    shape = (len(data.sentences), seq_length)
    token_ids = np.full(shape, pad_id, np.int32)
    labels = np.full(shape, IGNORE_LABEL, np.int32)
    word_ids = np.full(shape, -1, np.int32)
    num_words = np.array([len(sentence) for sentence in data.sentences], np.int32)
    truncated = 0
    for row, sentence in enumerate(data.sentences):
        token_ids[row, 0] = cls_id
        position = 1
        for index in range(len(sentence)):
            pieces = next(pieces_per_word) or [tokenizer.unk_id]
            if position + len(pieces) > seq_length - 1:
                truncated += 1
                position = seq_length  # no later word of this sentence fits either
                continue
            token_ids[row, position:position + len(pieces)] = pieces
            word_ids[row, position] = index
            if data.tags is not None:
                labels[row, position] = data.tags[row][index]
            position += len(pieces)
        length = min(position, seq_length - 1)
        token_ids[row, length] = sep_id
    if truncated:
        warnings.warn(f"{truncated} word(s) did not fit in seq_length={seq_length} and were "
                      f"cut; raise seq_length to keep them", stacklevel=2)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros(shape, np.int32),
              "padding_mask": (token_ids != pad_id).astype(np.int32)}
    return TaggingFeatures(inputs, labels if data.tags is not None else None, word_ids,
                           num_words)
