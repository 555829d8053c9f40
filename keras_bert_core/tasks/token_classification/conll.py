"""CoNLL, the data format of token tagging (NER, chunking): token-per-line files.

`load_conll` reads them into `TaggingData` (`keras_bert_core.tasks.tfds` reads CoNLL-2003);
`scores` counts whole entities, as conlleval does.
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
    with open(path, encoding="utf-8-sig") as f:  # drops a byte-order mark
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
