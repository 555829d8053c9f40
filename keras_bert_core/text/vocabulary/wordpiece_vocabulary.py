"""Loading and checking BERT WordPiece vocabularies (``vocab.txt``: one token per line)."""

import os

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocabulary(vocabulary):
    """Returns the vocabulary as a list of tokens, checked for the BERT special tokens.

    Args:
        vocabulary: path to a ``vocab.txt`` (one token per line, line number = id), or a
            list/tuple of tokens.

    Raises:
        ValueError: the vocabulary is empty, has duplicate tokens, lacks any of
            ``[PAD] [UNK] [CLS] [SEP] [MASK]``, or holds no word piece besides bracketed
            tokens such as those; the message names them and the source.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        source = os.fspath(vocabulary)
        with open(source, encoding="utf-8") as f:
            tokens = [line.rstrip("\r\n") for line in f]
        # A trailing newline at the end of the file is not an empty token.
        while tokens and not tokens[-1]:
            tokens.pop()
    else:
        source = "the given token list"
        tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in vocabulary]
    if not tokens:
        raise ValueError(f"The vocabulary from {source} is empty.")
    seen, duplicates = set(), []
    for token in tokens:
        if token in seen:
            duplicates.append(token)
        seen.add(token)
    if duplicates:
        raise ValueError(f"The vocabulary from {source} repeats tokens: {duplicates[:10]}")
    missing = [t for t in SPECIAL_TOKENS if t not in seen]
    if missing:
        raise ValueError(
            f"The vocabulary from {source} lacks the special tokens {missing}; "
            f"a BERT vocabulary needs all of {list(SPECIAL_TOKENS)}."
        )
    # Bracketed tokens are never matched in text: without a word piece nothing can be read.
    if all(t.startswith("[") and t.endswith("]") for t in tokens):
        raise ValueError(
            f"The vocabulary from {source} holds only special tokens such as "
            f"{tokens[:3]}; it needs word pieces (learn one with `kbc vocab`)."
        )
    return tokens
