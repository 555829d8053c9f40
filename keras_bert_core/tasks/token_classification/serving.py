"""`TokenTagging`: a token classifier served from raw text, tags by word."""

from __future__ import annotations

import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask, left_align, offset_at
from keras_bert_core.text.windows import join_windows


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


class WindowedTokenTagging(TokenTagging):
    """`TokenTagging` of texts longer than the model's window: the tagger runs on each
    text's overlapping windows (`kbc.LongTextPreprocessor`), and each wordpiece takes its
    tag from the window where it sits most centrally (`text.windows.join_windows`); the
    answers are then `TokenTagging`'s on the whole text.

    Args:
        stride: the windows' stride (the preprocessor's).
        vocabulary, special_ids, label_names, continues_word: as for `TokenTagging`.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
    >>> task = WindowedTokenTagging(1, vocab, special_ids=(2, 3, 0))
    >>> windows = {"token_ids": tf.constant([[[2, 5, 6, 3], [2, 6, 7, 3]]]),
    ...            "segment_ids": tf.zeros([1, 2, 4], tf.int32),
    ...            "padding_mask": tf.ones([1, 2, 4], tf.int32)}
    >>> tagger = lambda rows, training: tf.one_hot(rows["token_ids"] - 5, 3)
    >>> logits, text = task.run_model(tagger, windows)
    >>> text["token_ids"].numpy().tolist(), logits.numpy().argmax(-1).tolist()
    ([[2, 5, 6, 7, 3]], [[0, 0, 1, 2, 0]])
    """

    windowed = True

    def __init__(self, stride, vocabulary, special_ids, label_names=None, continues_word=None):
        super().__init__(vocabulary, special_ids, label_names, continues_word)
        self.stride = stride

    def encode(self, preprocessor, texts, static_shape, with_offsets=True):
        if not with_offsets:
            return super().encode(preprocessor, texts, static_shape, with_offsets)
        ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(texts["text"])
        return preprocessor.windows(ids, static_shape), (starts, ends)

    def run_model(self, model, features):
        shape = tf.shape(features["token_ids"])  # [batch, windows, seq]
        rows = {name: tf.reshape(value, [-1, shape[2]]) for name, value in features.items()}
        logits = model(rows, training=False)
        logits = tf.reshape(logits, tf.concat([shape, tf.shape(logits)[-1:]], 0))
        mask = features["padding_mask"]
        logits, text_mask = join_windows(logits, mask, self.stride)
        token_ids, _ = join_windows(features["token_ids"], mask, self.stride)
        pad_id = self.special_ids[2]
        return logits, {"token_ids": tf.where(text_mask > 0, token_ids, pad_id),
                        "segment_ids": tf.zeros_like(text_mask), "padding_mask": text_mask}
