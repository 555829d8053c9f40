"""Corpus text files on disk: paths and globs expanded, each file checked to be UTF-8 text
holding a sentence (vocabulary learning and pretraining read the same files)."""

import os

import tensorflow as tf


def expand_text_files(files):
    """Expands paths and globs to a list of files, each checked to hold a sentence.

    Args:
        files: a path or glob, or a list of them.

    Returns:
        The list of file paths, each pattern's matches sorted.

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: a file is empty or holds only blank lines.

    Example:

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "w").write("One sentence.\\n")
    >>> expand_text_files(path) == [path]
    True
    """
    paths = glob_files(files)
    for path in paths:
        _check_has_sentence(path)
    return paths


def glob_files(files):
    patterns = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    paths = []
    for pattern in map(os.fspath, patterns):
        matches = [pattern] if tf.io.gfile.exists(pattern) else tf.io.gfile.glob(pattern)
        if not matches:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        paths += sorted(matches)
    return paths


# Bytes of a file read to check that it is UTF-8 text: enough to catch a file in another
# encoding without reading a large corpus twice (later invalid bytes are dropped, as the
# reference tokenizer drops them).
_ENCODING_CHECK_BYTES = 1 << 20


def _check_has_sentence(path):
    if tf.io.gfile.isdir(path):
        raise ValueError(f"Input {path!r} is a directory, not a text file.")
    with tf.io.gfile.GFile(path, "rb") as f:
        head = f.read(_ENCODING_CHECK_BYTES)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 3:  # not a character cut by the end of the head
            line = head.count(b"\n", 0, error.start) + 1
            column = error.start - (head.rfind(b"\n", 0, error.start) + 1) + 1
            raise ValueError(
                f"Input file {path!r} is not UTF-8 text: line {line}, column {column} holds "
                f"the byte 0x{head[error.start]:02x}; convert the file to UTF-8 (e.g. "
                "`iconv -f latin1 -t utf-8`).") from None
        text = head[:error.start].decode("utf-8")
    if text.strip():
        return
    problem = "is empty" if not head else "has no sentences, only blank lines"
    raise ValueError(f"Input file {path!r} {problem}.")
