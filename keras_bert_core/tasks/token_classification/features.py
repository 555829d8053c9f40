"""Token classification features: words split into pieces, each word labeled at its first
piece (every other position gets -100, which the token classifier's loss ignores)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import tensorflow as tf

# The label the token classifier's loss and accuracy leave out: defined beside them.
from keras_bert_core.models.metrics import IGNORE_LABEL
from keras_bert_core.text.windows import LENGTH_TIE_BREAK, window_spans


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
        sentence_ids: int32 `[rows]`, the sentence of each row, when a long sentence has
            several rows (its windows: see `tagging_features`); None: row `i` is sentence
            `i`. A word's `word_ids` entry is then at its first piece in the window where
            that piece sits most centrally; its label at its first piece in every window.

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
    sentence_ids: np.ndarray | None = None

    def __len__(self):
        return len(self.word_ids)

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


def tagging_features(data, tokenizer, seq_length=128, stride=None, max_windows=None):
    """Tokenizes word lists into `[CLS] pieces [SEP]` rows labeled at each word's first piece.

    A word the tokenizer drops entirely (e.g. a lone control character) becomes `[UNK]`, so
    every word keeps a position. Sentences longer than `seq_length - 2` pieces are cut (with a
    warning); their cut words have no position and `predictions_to_tags` tags them "O".
    With `max_windows`, a long sentence is instead rows of overlapping windows, as
    `kbc.LongTextPreprocessor` makes them (`windowed_tagging_features`).

    Args:
        data: a `TaggingData`.
        tokenizer: one of the package's tokenizers.
        seq_length: tokens per row, `[CLS]` and `[SEP]` included.
        stride: with `max_windows`: pieces between the starts of a sentence's windows.
        max_windows: None, or the most windows of a sentence.

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
    if max_windows is not None:
        return windowed_tagging_features(data, word_pieces(data, tokenizer), tokenizer,
                                         seq_length, stride, max_windows)
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    pieces_per_word = word_pieces(data, tokenizer)
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
            pieces = next(pieces_per_word)
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


def word_pieces(data, tokenizer):
    """An iterator over the pieces of every word of `data`, sentence after sentence; a
    word that the tokenizer drops entirely is `[UNK]`."""
    # Words after the first are tokenized with the space before them, as in the sentence
    # (byte-level BPE marks word starts by it; WordPiece and SentencePiece drop it).
    words = [word if index == 0 else " " + word
             for sentence in data.sentences for index, word in enumerate(sentence)]
    return iter([pieces or [tokenizer.unk_id]
                 for pieces in (tokenizer(words).to_list() if words else [])])


def windowed_tagging_features(data, pieces_per_word, tokenizer, seq_length, stride,
                              max_windows):
    """`TaggingFeatures` of each sentence as its overlapping windows (`text.windows`'
    spans, as `kbc.LongTextPreprocessor` makes them in the graph): a row per window,
    labeled at the first piece of every word in it (a word cut at the window's start
    continues unlabeled); a word's `word_ids` entry in the window where its first piece
    sits most centrally (SQuAD's rule). Pieces past `max_windows` windows are cut, with a
    warning.

    Example:
    >>> from keras_bert_core.tasks.token_classification import TaggingData
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"]
    >>> data = TaggingData([["a", "b", "c", "d"]], [[0, 1, 0, 1]], ["O", "B-X"])
    >>> features = tagging_features(data, BertTokenizer(vocab), 5, stride=2, max_windows=4)
    >>> features.inputs["token_ids"].tolist(), features.sentence_ids.tolist()
    ([[2, 5, 6, 7, 3], [2, 7, 8, 3, 0]], [0, 0])
    >>> features.labels.tolist(), features.word_ids.tolist()
    ([[-100, 0, 1, 0, -100], [-100, 0, 1, -100, -100]], [[-1, 0, 1, 2, -1], [-1, -1, 3, -1, -1]])
    """
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    room = seq_length - 2
    rows, labels, word_ids, sentence_ids = [], [], [], []
    truncated = 0
    for sentence_index, sentence in enumerate(data.sentences):
        pieces, firsts = [], []  # each word's first piece, by piece index
        for _ in sentence:
            firsts.append(len(pieces))
            pieces.extend(next(pieces_per_word))
        spans = window_spans(len(pieces), room, stride, max_windows)
        truncated += sum(first >= spans[-1][0] + spans[-1][1] for first in firsts)
        best = {}  # word -> (score, window): the window where its first piece is most central
        row_words = np.full((len(spans), seq_length), -1, np.int32)
        for window, (start, length) in enumerate(spans):
            token_ids = np.full(seq_length, pad_id, np.int32)
            token_ids[0], token_ids[1:length + 1] = cls_id, pieces[start:start + length]
            token_ids[length + 1] = sep_id
            row_labels = np.full(seq_length, IGNORE_LABEL, np.int32)
            for word, first in enumerate(firsts):
                if start <= first < start + length:
                    if data.tags is not None:
                        row_labels[first - start + 1] = data.tags[sentence_index][word]
                    score = (min(first - start, start + length - 1 - first)
                             + LENGTH_TIE_BREAK * length)
                    if word not in best or score > best[word][0]:
                        best[word] = (score, window)
            rows.append(token_ids)
            labels.append(row_labels)
            sentence_ids.append(sentence_index)
        for word, (_, window) in best.items():
            row_words[window, firsts[word] - spans[window][0] + 1] = word
        word_ids.extend(row_words)
    if truncated:
        warnings.warn(f"{truncated} word(s) did not fit in {max_windows} windows of "
                      f"seq_length={seq_length} and were cut; raise max_windows to keep "
                      "them", stacklevel=3)
    token_ids = np.array(rows, np.int32).reshape(-1, seq_length)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": (token_ids != pad_id).astype(np.int32)}
    num_words = np.array([len(sentence) for sentence in data.sentences], np.int32)
    return TaggingFeatures(inputs, np.array(labels, np.int32).reshape(-1, seq_length)
                           if data.tags is not None else None,
                           np.array(word_ids, np.int32).reshape(-1, seq_length), num_words,
                           np.array(sentence_ids, np.int32))
