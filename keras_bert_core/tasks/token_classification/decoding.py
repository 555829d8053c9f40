"""A token classifier's per-piece predictions back to one tag per word, and answers."""

from __future__ import annotations

import numpy as np


def predictions_to_tags(predictions, features, tag_names):
    """Maps per-token predictions back to one tag name per word.

    Each word takes the prediction at its first piece (of a long sentence's windows, the
    window where that piece is most central); words cut off by `seq_length` get "O".

    Args:
        predictions: logits `[num_sentences, seq_length, num_tags]` or tag ids
            `[num_sentences, seq_length]`.
        features: the `TaggingFeatures` the predictions were made on.
        tag_names: the tag vocabulary.

    Returns:
        A list of sentences, each a list of tag names, one per word.

    Example:
    >>> from keras_bert_core.tasks.token_classification import TaggingData, tagging_features
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
    sentence_of = (np.arange(len(features.word_ids)) if features.sentence_ids is None
                   else features.sentence_ids)  # a long sentence's windows are rows
    for row, position in zip(*np.nonzero(features.word_ids >= 0), strict=True):
        sentences[sentence_of[row]][features.word_ids[row, position]] = \
            tag_names[predictions[row, position]]
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
    >>> from keras_bert_core.tasks.token_classification import TaggingData, tagging_features
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
