"""What a vocabulary is, told from its tokens: its fingerprint (the same files, or not) and
its casing (whether any piece has a capital)."""

import hashlib
import tempfile

from keras_bert_core.text.vocabulary.files import (
    BYTE_PAIR,
    TOKENIZER_CONFIG,
    WORDPIECE,
    tokenizer_kind,
    write_vocabulary_files,
)


def vocabulary_fingerprint(tokenizer):
    """The sha256 of the vocabulary files `write_vocabulary_files` writes for `tokenizer`
    (vocab.txt; vocab.json and merges.txt; spiece.model), casing options left out: equal
    for tokenizers that give every text the same ids when cased alike.

    Example:
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fox", "dog"]
    >>> a, b = BertTokenizer(tokens), BertTokenizer(tokens, lower_case=False)
    >>> vocabulary_fingerprint(a) == vocabulary_fingerprint(b) != vocabulary_fingerprint(
    ...     BertTokenizer(tokens[:-1]))
    True
    """
    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory() as folder:
        for name, path in write_vocabulary_files(tokenizer, folder).items():
            if name != TOKENIZER_CONFIG:
                digest.update(name.encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()


def capitalized_tokens(tokenizer):
    """`(tokens with a capital letter, all tokens)` of a WordPiece or SentencePiece
    vocabulary, its special tokens (`[CLS]`, `<unk>`...) left out; `None` for byte-level
    BPE, whose pieces are bytes (and which is always cased).

    An uncased vocabulary (BERT-uncased, MiniLM) has no capitals at all; a cased one has
    thousands.

    Example:
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> capitalized_tokens(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                                   "Fox", "fox", "##es"]))
    (1, 8)
    """
    kind = tokenizer_kind(tokenizer)
    if kind == BYTE_PAIR:
        return None
    size = tokenizer.vocabulary_size()
    special = set(tokenizer.SPECIAL_TOKENS.values())
    tokens = (tokenizer.vocabulary if kind == WORDPIECE
              else [tokenizer.id_to_token(i) for i in range(size)])
    # Bracketed names ([CLS], [unused0]) are no text pieces.
    return sum(1 for token in tokens if token not in special and token != token.lower()
               and not (token.startswith("[") and token.endswith("]"))), size
