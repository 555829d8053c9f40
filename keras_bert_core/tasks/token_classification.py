"""Token classification (`BertTokenClassifier`): first-piece features, answers, serving.

`tagging_features` splits words into WordPieces and labels only the first piece of each word
(every other position gets -100, which the token classifier's loss ignores);
`predictions_to_tags` maps per-token predictions back to one tag per word, and `answers`
pairs them with the words; `TokenTagging` serves the model from raw text. The data and its
scoring are CoNLL's (`keras_bert_core.tasks.conll`).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import tensorflow as tf

# The label the token classifier's loss and accuracy leave out: defined beside them.
from keras_bert_core.models.metrics import IGNORE_LABEL
from keras_bert_core.tasks.serving import ServingTask, left_align, offset_at


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
    >>> from keras_bert_core.tasks.conll import TaggingData
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
    >>> from keras_bert_core.tasks.conll import TaggingData
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


def predictions_to_tags(predictions, features, tag_names):
    """Maps per-token predictions back to one tag name per word.

    Each word takes the prediction at its first piece; words cut off by `seq_length` get "O".

    Args:
        predictions: logits `[num_sentences, seq_length, num_tags]` or tag ids
            `[num_sentences, seq_length]`.
        features: the `TaggingFeatures` the predictions were made on.
        tag_names: the tag vocabulary.

    Returns:
        A list of sentences, each a list of tag names, one per word.

    Example:
    >>> from keras_bert_core.tasks.conll import TaggingData
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "love", "##lace"]
    >>> data = TaggingData([["Ada", "Lovelace"]], None, None)
    >>> features = tagging_features(data, BertTokenizer(vocab), seq_length=6)
    >>> predicted_ids = np.array([[0, 1, 2, 2, 0, 0]])  # e.g. logits.argmax(-1)
    >>> predictions_to_tags(predicted_ids, features, ["O", "B-PER", "I-PER"])
    [['B-PER', 'I-PER']]
    """
    predictions = np.asarray(predictions)
    if predictions.ndim == 3:
        predictions = predictions.argmax(-1)
    if predictions.shape != features.word_ids.shape:
        raise ValueError(f"predictions of shape {predictions.shape} do not match the features' "
                         f"{features.word_ids.shape}")
    sentences = [["O"] * count for count in features.num_words]
    for row, position in zip(*np.nonzero(features.word_ids >= 0), strict=True):
        sentences[row][features.word_ids[row, position]] = tag_names[predictions[row, position]]
    return sentences


def answers(data, features, logits, tag_names):
    """A fine-tuned `BertTokenClassifier`'s answers: each sentence's words with their tags.

    Args:
        data: the `TaggingData` the features were made from.
        features: its `TaggingFeatures`.
        logits: `[num_sentences, seq_length, num_tags]`, e.g.
            `model.predict(features.inputs)`, or the tag ids `[num_sentences, seq_length]`.
        tag_names: the tag vocabulary (`TaggingData.tag_names` of the training data).

    Returns:
        One JSON-ready dict per sentence: `{"words": [...], "tags": [...]}`, a tag per word.

    Example:
    >>> from keras_bert_core.tasks.conll import TaggingData
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "sang"]
    >>> data = TaggingData([["Ada", "sang"]], None, None)
    >>> features = tagging_features(data, BertTokenizer(vocab), seq_length=6)
    >>> logits = np.eye(2)[[[0, 1, 0, 0, 0, 0]]]  # one-hot: "Ada" B-PER, the rest O
    >>> answers(data, features, logits, ["O", "B-PER"])
    [{'words': ['Ada', 'sang'], 'tags': ['B-PER', 'O']}]
    """
    tags = predictions_to_tags(logits, features, tag_names)
    return [{"words": words, "tags": sentence_tags}
            for words, sentence_tags in zip(data.sentences, tags, strict=True)]


class TokenTagging(ServingTask):
    """Tags of `BertTokenClassifier`, per wordpiece and per word.

    A word is a piece that starts one (WordPiece: no `##`; BPE: `Ġ`; SentencePiece: `▁`; or
    the text's first piece) plus the pieces that continue it; it takes the tag of its first
    piece (as the tagging data labels words).

    Args:
        vocabulary: the preprocessor's tokens (index = id).
        special_ids: ids of the tokens that belong to no word (`[CLS]`, `[SEP]`, `[PAD]`).
        label_names: optional tag names, index = tag id.
        continues_word: the tokenizer's `continues_word(token)`; default WordPiece's.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing", "now"]
    >>> task = TokenTagging(vocab, special_ids=(2, 3, 0), label_names=["O", "VERB"])
    >>> features = {"token_ids": tf.constant([[2, 5, 6, 7, 3, 0]]),  # [CLS] play ##ing now
    ...             "padding_mask": tf.constant([[1, 1, 1, 1, 1, 0]])}
    >>> outputs = task.outputs(tf.one_hot([[0, 1, 1, 0, 0, 0]], 2), features)
    >>> outputs["word_start"].numpy().tolist(), outputs["tag_names"].numpy()[0, 1:4].tolist()
    ([[0, 1, 0, 1, 0, 0]], [b'VERB', b'VERB', b'O'])
    """

    def __init__(self, vocabulary, special_ids, label_names=None, continues_word=None):
        super().__init__(pairs=False)
        self.vocabulary = list(vocabulary)
        self.special_ids = tuple(special_ids)
        self.label_names = label_names
        self.continues_word = continues_word or (lambda token: token.startswith("##"))

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        if not with_offsets:
            return super().encode(preprocessor, texts, static_shape)
        ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(texts["text"])
        return preprocessor.packer(ids, static_shape=static_shape), (starts, ends)

    def outputs(self, logits, features):
        tags = tf.argmax(logits, axis=-1, output_type=tf.int32)
        in_word = self._in_word(features)
        continues = tf.gather(tf.constant([self.continues_word(t) for t in self.vocabulary]),
                              features["token_ids"])
        # The text's first piece starts a word even unmarked (BPE's first word has no Ġ).
        after_word = tf.concat([tf.zeros_like(in_word[:, :1]), in_word[:, :-1]], axis=1)
        word_start = in_word & ~(continues & after_word)
        outputs = {"logits": logits, "tags": tags, "word_start": tf.cast(word_start, tf.int32)}
        if self.label_names is not None:
            outputs["tag_names"] = tf.gather(tf.constant(self.label_names), tags)
        return outputs

    def offset_outputs(self, outputs, features, offsets):
        starts, ends = offsets
        word_start = outputs["word_start"] > 0
        continues = self._in_word(features) & ~word_start
        word_end = self._in_word(features) & ~tf.concat(
            [continues[:, 1:], tf.zeros_like(continues[:, :1])], axis=1)
        # Piece k of the text sits at position k + 1, after [CLS].
        piece = tf.expand_dims(tf.range(tf.shape(word_start)[1]), 0) - 1
        word_tags = left_align(outputs["tags"], word_start, -1)
        result = {"word_begin": left_align(offset_at(starts, piece), word_start, 0),
                  "word_end": left_align(offset_at(ends, piece), word_end, 0),
                  "word_tags": word_tags}
        if self.label_names is not None:
            # "" for no word: the last name (TFLite selects no strings, but gathers them).
            names = tf.constant([*self.label_names, ""])
            result["word_tag_names"] = tf.gather(
                names, tf.where(word_tags >= 0, word_tags, len(self.label_names)))
        return result

    def text_outputs(self, outputs, features, texts, offsets):
        begin, end = outputs["word_begin"], outputs["word_end"]
        text = tf.broadcast_to(tf.expand_dims(texts["text"], 1), tf.shape(begin))
        return {"tokens": tf.gather(tf.constant(self.vocabulary), features["token_ids"]),
                "words": tf.strings.substr(text, begin, end - begin)}

    def _in_word(self, features):
        token_ids = features["token_ids"]
        special = tf.reduce_any(
            tf.expand_dims(token_ids, 2) == tf.constant(self.special_ids), axis=-1)
        return (features["padding_mask"] > 0) & ~special
