"""The four tokenizer kinds of the BERT family and `VocabularySource`, a vocabulary with the
kind it is for (see `files.find_vocabulary`)."""

import dataclasses
import os

WORDPIECE = "wordpiece"
BYTE_PAIR = "byte_pair"
SENTENCEPIECE = "sentencepiece"
# SentencePiece read through fairseq's dictionary (XLM-RoBERTa's `sentencepiece.bpe.model`).
FAIRSEQ_SENTENCEPIECE = "fairseq_sentencepiece"
TOKENIZER_KINDS = (WORDPIECE, BYTE_PAIR, SENTENCEPIECE, FAIRSEQ_SENTENCEPIECE)


@dataclasses.dataclass(frozen=True)
class VocabularySource:
    """A vocabulary and the tokenizer it is for.

    Attributes:
        kind: one of `TOKENIZER_KINDS`.
        vocabulary: what the tokenizer takes: a `vocab.txt` path or list of tokens
            (WordPiece), a `vocab.json` path or dict (BPE), a `.model` path or its bytes
            (SentencePiece, fairseq SentencePiece).
        merges: the BPE merges (a `merges.txt` path or list), None for the other kinds.
        options: tokenizer arguments read from a folder's `tokenizer_config.json`
            (`lower_case`, `keep_accents`); empty otherwise.
        read_from: the file the tokens were read from where `vocabulary` holds them in
            memory (a Hugging Face `tokenizer.json`), else None.

    Example:
    >>> VocabularySource(WORDPIECE, "model/vocab.txt").file
    'model/vocab.txt'
    >>> VocabularySource(WORDPIECE, ["[PAD]"], read_from="model/tokenizer.json").file
    'model/tokenizer.json'
    """

    kind: str
    vocabulary: object
    merges: object = None
    options: dict = dataclasses.field(default_factory=dict)
    read_from: str = None

    @property
    def file(self):
        """The file messages name: `read_from`, else the vocabulary's path (None for a
        vocabulary given in memory)."""
        if self.read_from is not None:
            return self.read_from
        if isinstance(self.vocabulary, (str, os.PathLike)):
            return os.fspath(self.vocabulary)
        return None
