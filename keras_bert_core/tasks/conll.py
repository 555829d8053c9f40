"""CoNLL, the data format of token tagging (NER, chunking): files and entity-level scores.

`load_conll` reads token-per-line files into `TaggingData` (`keras_bert_core.tasks.tfds`
reads CoNLL-2003); `entity_scores` counts whole entities, as conlleval and seqeval's default
mode do. `keras_bert_core.tasks.token_classification` makes features and answers.
"""

from __future__ import annotations

import dataclasses
import os

from keras_bert_core.errors import DataError


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
