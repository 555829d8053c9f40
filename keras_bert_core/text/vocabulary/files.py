"""Which tokenizer a vocabulary is for, found from what is given, and its files written back.

The BERT family uses four kinds of tokenizers, each with its own vocabulary files:

- WordPiece (BERT, DistilBERT): `vocab.txt`, one token per line.
- Byte-level BPE (RoBERTa): `vocab.json` (token -> id) and `merges.txt`.
- SentencePiece (ALBERT): `spiece.model`, a serialized SentencePiece model; DeBERTa's is
  `spm.model` (its tokenizer, `DebertaTokenizer`, adds `[MASK]` after the pieces).
- SentencePiece through fairseq's dictionary (XLM-RoBERTa): `sentencepiece.bpe.model`.

A Hugging Face checkpoint folder holds one of them (often beside `tokenizer.json`), and may
say in `tokenizer_config.json` whether the model is lower-cased (`do_lower_case`) and, for
SentencePiece, whether accents are kept (`keep_accents`). Where `tokenizer_config.json` does
not say the casing, `tokenizer.json`'s normalizer does (the only place a folder saved by HF
`tokenizers` alone keeps it). A folder that holds `tokenizer.json` alone (as transformers 5
saves one) gives the vocabulary inside it, where the package's tokenizers reproduce its
settings (see `tokenizer_json.read_tokenizer_json`).
"""

import dataclasses
import json
import os

import tensorflow as tf

from keras_bert_core.text.vocabulary.kinds import (
    BYTE_PAIR,
    FAIRSEQ_SENTENCEPIECE,
    SENTENCEPIECE,
    TOKENIZER_KINDS,
    WORDPIECE,
    VocabularySource,
)
from keras_bert_core.text.vocabulary.tokenizer_json import (
    TOKENIZER_JSON,
    check_bert_tokenizer_config,
    read_tokenizer_json,
)

# The vocabulary files of each kind, in the order a folder's files are preferred.
VOCABULARY_FILES = {
    SENTENCEPIECE: ("spiece.model",),
    FAIRSEQ_SENTENCEPIECE: ("sentencepiece.bpe.model",),
    BYTE_PAIR: ("vocab.json", "merges.txt"),
    WORDPIECE: ("vocab.txt",),
}
# DeBERTa's SentencePiece model, where a folder holds no `spiece.model`.
DEBERTA_MODEL = "spm.model"
TOKENIZER_CONFIG = "tokenizer_config.json"
# tokenizer_config.json keys -> tokenizer arguments, by kind.
_CONFIG_OPTIONS = {
    WORDPIECE: {"do_lower_case": "lower_case"},
    SENTENCEPIECE: {"do_lower_case": "lower_case", "keep_accents": "keep_accents"},
    BYTE_PAIR: {},
    FAIRSEQ_SENTENCEPIECE: {},
}

# BytePairTokenizer's steps before BPE (ModernBERT's tokenizer.json), as a folder's
# tokenizer_config.json keeps them: key -> argument.
_BYTE_PAIR_OPTIONS = {"normalization": "normalization",
                      "matched_added_tokens": "added_tokens"}


def find_vocabulary(vocabulary, merges=None):
    """The `VocabularySource` of a vocabulary given as a file, a folder or in memory.

    - a folder (e.g. a Hugging Face checkpoint): the first of `spiece.model`,
      `sentencepiece.bpe.model`, `vocab.json` with `merges.txt`, `vocab.txt`, `spm.model`
      (DeBERTa's) that it holds, else the vocabulary inside its `tokenizer.json`
      (`read_from` names it), and the options of its `tokenizer_config.json`;
    - a path ending in `.model`: SentencePiece (XLM-RoBERTa's, fairseq's ids, if named
      `sentencepiece.bpe.model`); a `tokenizer.json`: the vocabulary inside
      it; in `.json`: BPE, its merges from `merges` or else from `merges.txt` beside it;
      any other file: a WordPiece `vocab.txt`;
    - a list or tuple of tokens: WordPiece; a dict: BPE (with `merges`); bytes: a
      serialized SentencePiece model.

    Raises:
        ValueError: the folder holds none of the files, its tokenizer.json has settings
            the package's tokenizers do not reproduce, a BPE vocabulary has no merges, or
            `merges` is given with a vocabulary of another kind.

    Example:
    >>> find_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]).kind
    'wordpiece'
    >>> find_vocabulary({"<s>": 0}, merges=[]).kind
    'byte_pair'
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if tf.io.gfile.isdir(path):
            return _find_in_folder(path, merges)
        if os.path.basename(path) == TOKENIZER_JSON:
            return read_tokenizer_json(path)
        if path.endswith(".json"):
            if merges is None:
                merges = os.path.join(os.path.dirname(path), "merges.txt")
                if not tf.io.gfile.exists(merges):
                    raise ValueError(f"{path} is a byte-level BPE vocabulary, but no merges.txt "
                                     "is beside it: pass merges=<path to merges.txt>")
            return VocabularySource(BYTE_PAIR, path, merges)
        kind = SENTENCEPIECE if path.endswith(".model") else WORDPIECE
        if os.path.basename(path) in VOCABULARY_FILES[FAIRSEQ_SENTENCEPIECE]:
            kind = FAIRSEQ_SENTENCEPIECE
    elif isinstance(vocabulary, dict):
        if merges is None:
            raise ValueError("a BPE vocabulary (a dict of token -> id) needs its merges: pass "
                             "merges=<merges.txt path or list of 'left right' strings>")
        return VocabularySource(BYTE_PAIR, vocabulary, merges)
    elif isinstance(vocabulary, bytes):
        kind = SENTENCEPIECE
    elif isinstance(vocabulary, (list, tuple)):
        kind = WORDPIECE
    else:
        raise TypeError(f"vocabulary must be a path, a folder, a list of tokens, a dict "
                        f"(BPE) or bytes (SentencePiece), got {type(vocabulary).__name__}")
    _no_merges(kind, merges)
    return VocabularySource(kind, vocabulary)


def _find_in_folder(folder, merges):
    names = set(tf.io.gfile.listdir(folder))
    for kind, files in VOCABULARY_FILES.items():
        if all(name in names for name in files):
            if kind != BYTE_PAIR:
                _no_merges(kind, merges)
            paths = [os.path.join(folder, name) for name in files]
            return VocabularySource(kind, paths[0], merges if merges is not None else (
                paths[1] if kind == BYTE_PAIR else None), _folder_options(folder, kind))
    if DEBERTA_MODEL in names:
        return VocabularySource(SENTENCEPIECE, os.path.join(folder, DEBERTA_MODEL),
                                options=_folder_options(folder, SENTENCEPIECE))
    if TOKENIZER_JSON in names:
        source = read_tokenizer_json(os.path.join(folder, TOKENIZER_JSON))
        if source.kind != BYTE_PAIR:
            _no_merges(source.kind, merges)
        options = {**source.options, **_folder_options(folder, source.kind)}
        if source.kind == WORDPIECE:
            config = os.path.join(folder, TOKENIZER_CONFIG)
            check_bert_tokenizer_config(config, _read_json(config) or {}, options["lower_case"])
        return dataclasses.replace(
            source, merges=merges if merges is not None else source.merges, options=options)
    wanted = ", ".join(" with ".join(files) for files in (*VOCABULARY_FILES.values(),
                                                           (TOKENIZER_JSON,)))
    raise ValueError(f"{folder} holds no vocabulary file: looked for {wanted}")


def _folder_options(folder, kind):
    """Tokenizer arguments from the folder's tokenizer_config.json, the casing from
    tokenizer.json's normalizer where tokenizer_config.json does not say it."""
    config = _read_json(os.path.join(folder, TOKENIZER_CONFIG)) or {}
    options = {argument: bool(config[key]) for key, argument in _CONFIG_OPTIONS[kind].items()
               if isinstance(config.get(key), bool)}
    if kind == BYTE_PAIR:  # as write_vocabulary_files writes them
        options.update({argument: config[key] for key, argument in _BYTE_PAIR_OPTIONS.items()
                        if config.get(key)})
    if "lower_case" in _CONFIG_OPTIONS[kind].values() and "lower_case" not in options:
        lower_case = _normalizer_lowercases(_read_json(os.path.join(folder, "tokenizer.json")))
        if lower_case is not None:
            options["lower_case"] = lower_case
    return options


def _read_json(path):
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON: {error}") from None


def _normalizer_lowercases(tokenizer_json):
    """Whether a `tokenizers` normalizer lower-cases: BertNormalizer's `lowercase`, or a
    Lowercase step in a Sequence; None where the file or its normalizer says nothing."""
    normalizer = (tokenizer_json or {}).get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer" and isinstance(
            normalizer.get("lowercase"), bool):
        return normalizer["lowercase"]
    if normalizer.get("type") == "Sequence":
        return any(step.get("type") == "Lowercase" for step in normalizer.get("normalizers", []))
    return None


def _no_merges(kind, merges):
    if merges is not None:
        raise ValueError(f"merges is only for byte-level BPE vocabularies (vocab.json); this "
                         f"vocabulary is {kind}")


def tokenizer_kind(tokenizer):
    """The kind (`TOKENIZER_KINDS`) of a tokenizer layer of this package: the
    `vocabulary_kind` its class sets (see `text.tokenizer.Tokenizer`)."""
    kind = getattr(tokenizer, "vocabulary_kind", None)
    if kind not in TOKENIZER_KINDS:
        raise TypeError(f"not a keras_bert_core tokenizer: {type(tokenizer).__name__}")
    return kind


def write_vocabulary_files(tokenizer, directory):
    """Writes the files a tokenizer is made from into `directory`, and a
    `tokenizer_config.json` with its casing options: the folder then rebuilds the same
    tokenizer through `find_vocabulary`.

    Returns:
        dict of file name -> path, the vocabulary files first in `VOCABULARY_FILES` order
        (a SentencePiece tokenizer's own `MODEL_FILE`)
        (the config last).
    """
    kind = tokenizer_kind(tokenizer)
    files = ((tokenizer.MODEL_FILE,) if kind == SENTENCEPIECE else VOCABULARY_FILES[kind])
    paths = {name: os.path.join(directory, name) for name in (*files, TOKENIZER_CONFIG)}
    config = {}
    if kind == WORDPIECE:
        with open(paths["vocab.txt"], "w", encoding="utf-8") as f:
            f.writelines(token + "\n" for token in tokenizer.vocabulary)
        config["do_lower_case"] = tokenizer.lower_case
    elif kind == BYTE_PAIR:
        with open(paths["vocab.json"], "w", encoding="utf-8") as f:
            json.dump(tokenizer.vocabulary, f, ensure_ascii=False)
        with open(paths["merges.txt"], "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            f.writelines(merge + "\n" for merge in tokenizer.merges)
        config.update({key: getattr(tokenizer, argument)
                       for key, argument in _BYTE_PAIR_OPTIONS.items()
                       if getattr(tokenizer, argument, None)})
    elif kind == FAIRSEQ_SENTENCEPIECE:  # reads text as it is: no options
        with open(paths["sentencepiece.bpe.model"], "wb") as f:
            f.write(sentencepiece_model_bytes(tokenizer))
    else:
        with open(paths[tokenizer.MODEL_FILE], "wb") as f:
            f.write(sentencepiece_model_bytes(tokenizer))
        config["do_lower_case"] = tokenizer.lower_case
        config["keep_accents"] = tokenizer.keep_accents
    with open(paths[TOKENIZER_CONFIG], "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    return paths


def sentencepiece_model_bytes(tokenizer):
    """The serialized SentencePiece model of a `SentencePieceTokenizer`."""
    model = getattr(tokenizer, "model", None)
    if isinstance(model, bytes):
        return model
    with tf.io.gfile.GFile(os.fspath(model), "rb") as f:
        return f.read()
