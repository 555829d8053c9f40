"""Token classification (NER, chunking): CoNLL files, first-piece labels, entity-level F1.

`load_conll` reads token-per-line files; `tagging_features` splits words into WordPieces and
labels only the first piece of each word (every other position gets -100, which the token
classifier's loss ignores); `predictions_to_tags` maps per-token predictions back to one tag
per word; `entity_scores` counts whole entities, as conlleval and seqeval's default mode do.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np
import tensorflow as tf

from keras_bert_core.errors import DataError

# The label the token classifier's loss and accuracy leave out: defined beside them.
from keras_bert_core.models.metrics import IGNORE_LABEL


@dataclasses.dataclass
class TaggingData:
    """Sentences as word lists, with one tag id per word.

    Args:
        sentences: a list of sentences, each a list of words.
        tags: per sentence, a list of int tag ids (one per word), or `None` if unlabeled.
        tag_names: the tag vocabulary: `tag_names[i]` is the name of tag `i`.

    Example:
    >>> data = TaggingData([["Ada", "sang"]], [[1, 0]], ["O", "B-PER"])
    >>> [data.tag_names[i] for i in data.tags[0]]
    ['B-PER', 'O']
    """

    sentences: list
    tags: list | None
    tag_names: list | None

    def __len__(self):
        return len(self.sentences)


def _tag_vocabulary(tags):
    """Sorted by entity type, then prefix, with "O" first: O, B-LOC, I-LOC, B-PER, ..."""
    return sorted(set(tags), key=lambda tag: (tag != "O", tag[2:], tag))


def load_conll(path, tag_names=None, tag_column=-1):
    """Reads a CoNLL-format file: one token per line, its tag in a column, sentences apart.

    Columns are separated by whitespace; the word is the first column. Blank lines end
    sentences and `-DOCSTART-` lines are skipped.

    Args:
        path: the file.
        tag_names: the tag vocabulary, in id order. A tag outside it is an error. `None`
            builds it from the file ("O" first, then by entity type).
        tag_column: the column holding the tag (default: the last); `None` for unlabeled
            files of one word per line.

    Returns:
        A `TaggingData`.

    Raises:
        DataError: naming the file, line and column of a line without a tag column, a tag
            outside `tag_names`, or a file without sentences.

    Example:
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt")
    >>> _ = open(path, "w").write("-DOCSTART- O\\n\\nAda NNP B-PER\\nsang VBD O\\n\\n")
    >>> data = load_conll(path)
    >>> data.sentences, data.tags, data.tag_names
    ([['Ada', 'sang']], [[1, 0]], ['O', 'B-PER'])
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataError("no such file", path=path)
    sentences, tags = [], []
    words, sentence_tags = [], []
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate([*f, ""], start=1):
            fields = line.split()
            if fields and fields[0] == "-DOCSTART-":
                continue
            if not fields:
                if words:
                    sentences.append(words)
                    tags.append(sentence_tags)
                words, sentence_tags = [], []
                continue
            words.append(fields[0])
            if tag_column is None:
                continue
            if len(fields) < 2 or not -len(fields) <= tag_column < len(fields):
                raise DataError(f"expected a word and a tag in column {tag_column}, found "
                                f"{line.strip()!r}", path=path, line=line_number,
                                column=tag_column)
            tag = fields[tag_column]
            if tag_names is not None and tag not in tag_names:
                raise DataError(f"unknown tag {tag!r}; expected one of {list(tag_names)}",
                                path=path, line=line_number, column=tag_column)
            sentence_tags.append(tag)
    if not sentences:
        raise DataError("no sentences", path=path)
    if tag_column is None:
        return TaggingData(sentences, None, None)
    tag_names = list(tag_names or _tag_vocabulary(tag for tag_list in tags for tag in tag_list))
    ids = {name: index for index, name in enumerate(tag_names)}
    return TaggingData(sentences, [[ids[tag] for tag in tag_list] for tag_list in tags],
                       tag_names)


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
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
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
        tokenizer: the package's `BertTokenizer`.
        seq_length: tokens per row, `[CLS]` and `[SEP]` included.

    Returns:
        A `TaggingFeatures`.

    Example:
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ada", "love", "##lace", "sang"]
    >>> data = TaggingData([["Ada", "Lovelace", "sang"]], [[1, 2, 0]], ["O", "B-PER", "I-PER"])
    >>> features = tagging_features(data, BertTokenizer(vocab), seq_length=8)
    >>> features.inputs["token_ids"][0].tolist()
    [2, 5, 6, 7, 8, 3, 0, 0]
    >>> features.labels[0].tolist()
    [-100, 1, 2, -100, 0, -100, -100, -100]
    """
    cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    words = [word for sentence in data.sentences for word in sentence]
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
    >>> from keras_bert_core.text.tokenizer import BertTokenizer
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


def _split_tag(tag):
    """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
    prefix, _, entity_type = tag.partition("-")
    return ("O", "") if prefix == "O" else (prefix, entity_type)


def get_entities(tags):
    """Entity chunks `(type, start, end)` (end exclusive) in a tag sequence.

    Follows conlleval's chunking, so IOB2 (BIO), IOB1 and IOBES tags all work: an `I-` tag
    after `O` or after another type starts an entity, and a type change ends one.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5)]
    """
    entities = []
    prev_prefix, prev_type, start = "O", "", None
    for position, tag in enumerate([*tags, "O"]):
        prefix, entity_type = _split_tag(tag)
        ends = (prev_prefix in ("E", "S")
                or (prev_prefix in ("B", "I") and prefix in ("B", "S", "O"))
                or (prev_prefix != "O" and prev_type != entity_type))
        starts = (prefix in ("B", "S")
                  or (prev_prefix in ("E", "S", "O") and prefix in ("I", "E"))
                  or (prefix != "O" and prev_type != entity_type))
        if ends and start is not None:
            entities.append((prev_type, start, position))
            start = None
        if starts:
            start = position
        prev_prefix, prev_type = prefix, entity_type
    return entities


def entity_scores(true_tags, predicted_tags):
    """Entity-level precision, recall and F1 (micro-averaged), as conlleval computes them.

    An entity counts as right only when its type, start and end all match.

    Args:
        true_tags: a list of sentences, each a list of tag names.
        predicted_tags: the same shape of predicted tag names.

    Returns:
        A dict with `precision`, `recall`, `f1` (fractions in [0, 1]) and `per_type`, a dict
        from entity type to its own `precision`, `recall`, `f1` and `support` (true count).

    Example:
    >>> scores = entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    >>> scores["f1"], scores["per_type"]["PER"]["support"]
    (0.0, 1)
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted")
    true_set, predicted_set = set(), set()
    for index, (truth, predicted) in enumerate(zip(true_tags, predicted_tags, strict=True)):
        if len(truth) != len(predicted):
            raise ValueError(f"sentence {index}: {len(truth)} true tags but "
                             f"{len(predicted)} predicted")
        true_set.update((index, *entity) for entity in get_entities(truth))
        predicted_set.update((index, *entity) for entity in get_entities(predicted))

    def scores(truth, predicted):
        correct = len(truth & predicted)
        precision = correct / len(predicted) if predicted else 0.0
        recall = correct / len(truth) if truth else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "support": len(truth)}

    types = sorted({entity[1] for entity in true_set | predicted_set})
    per_type = {entity_type: scores({e for e in true_set if e[1] == entity_type},
                                    {e for e in predicted_set if e[1] == entity_type})
                for entity_type in types}
    overall = scores(true_set, predicted_set)
    del overall["support"]
    return {**overall, "per_type": per_type}
