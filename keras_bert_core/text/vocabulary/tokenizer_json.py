"""The vocabulary of a Hugging Face `tokenizer.json`, for folders that hold no other
tokenizer file (as sentence-transformers with transformers 5 saves them).

Read only where the package's tokenizer gives the file's ids: a WordPiece model behind
BERT's normalizer and pre-tokenizer (`BertTokenizer`), a BPE model behind GPT-2's
byte-level pre-tokenizer and no normalizer or NFC (`BytePairTokenizer`; ModernBERT's), or
XLM-RoBERTa's Unigram model (`XlmRobertaTokenizer`, see `unigram_json`). Any other setting
(another Unigram model, another normalizer or pre-tokenizer, a word-piece prefix other than
`##`, a WordPiece non-special added token, a BPE one that is not a plain string to find;
beside it, a `tokenizer_config.json` `strip_accents` or `tokenize_chinese_chars` that
transformers would apply) is refused in one line naming the file and the setting, never
read into a tokenizer that would cut text differently.
"""

import json

import tensorflow as tf

from keras_bert_core.text.character_normalization import MAX_CHARS_PER_WORD
from keras_bert_core.text.vocabulary.kinds import BYTE_PAIR, WORDPIECE, VocabularySource
from keras_bert_core.text.vocabulary.unigram_json import read_xlm_roberta_json

TOKENIZER_JSON = "tokenizer.json"


def read_tokenizer_json(path):
    """The `VocabularySource` (tokens in memory, `read_from=path`) of a `tokenizer.json`.

    - `"WordPiece"` with a `BertNormalizer` (cleaning text and splitting CJK characters;
      accents stripped exactly when lower-casing) and a `BertPreTokenizer`, its unknown
      token `[UNK]`, prefix `##`: WordPiece, the tokens in id order, `lower_case` from the
      normalizer;
    - `"BPE"` with a `ByteLevel` pre-tokenizer (GPT-2's regex, no prefix space) and no
      normalizer or `NFC`: byte-level BPE, `model.vocab` and `model.merges` (`"a b"` strings
      or `[a, b]` pairs) as `vocab.json` and `merges.txt` hold them, the added tokens that
      `model.vocab` lacks (ModernBERT's [CLS]... past it) joined to the vocabulary, and the
      options `normalization` and `added_tokens` (see `byte_pair_added_tokens`);
    - `"Unigram"` laid out as XLM-RoBERTa's: the SentencePiece model it was converted from
      (`unigram_json.read_xlm_roberta_json`).

    Raises:
        ValueError: the file is not valid JSON, has no tokenizer model, or any setting the
            package's tokenizers do not reproduce (named, with the file).

    Example:
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fox"]
    >>> with open(path, "w") as f:
    ...     json.dump({"normalizer": {"type": "BertNormalizer", "clean_text": True,
    ...                               "handle_chinese_chars": True, "strip_accents": None,
    ...                               "lowercase": True},
    ...                "pre_tokenizer": {"type": "BertPreTokenizer"},
    ...                "model": {"type": "WordPiece", "unk_token": "[UNK]",
    ...                          "continuing_subword_prefix": "##",
    ...                          "max_input_chars_per_word": 100,
    ...                          "vocab": {t: i for i, t in enumerate(tokens)}}}, f)
    >>> source = read_tokenizer_json(path)
    >>> source.kind, source.vocabulary[-1], source.options
    ('wordpiece', 'fox', {'lower_case': True})
    """
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            spec = json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON: {error}") from None
    model = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("vocab"), (dict, list)):
        raise ValueError(f"{path}: holds no Hugging Face tokenizer model (no model.vocab)")
    kind = model.get("type")
    if kind == "WordPiece":
        return _wordpiece(path, spec, model)
    if kind == "BPE":
        return _byte_pair(path, spec, model)
    if kind == "Unigram":
        return read_xlm_roberta_json(path, spec, model)
    raise ValueError(f"{path}: model.type {kind!r} is not one keras_bert_core reads (WordPiece, "
                     "byte-level BPE)")


def _wordpiece(path, spec, model):
    settings = {"model.unk_token": (model.get("unk_token"), "[UNK]"),
                "model.continuing_subword_prefix": (model.get("continuing_subword_prefix"),
                                                    "##"),
                "model.max_input_chars_per_word": (model.get("max_input_chars_per_word"),
                                                   MAX_CHARS_PER_WORD)}
    _refuse_others(path, settings)
    normalizer = spec.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        raise ValueError(f"{path}: normalizer {_kind(normalizer)} with a WordPiece model: "
                         "keras_bert_core's BertTokenizer reproduces BertNormalizer only")
    _refuse_others(path, {
        "normalizer.clean_text": (normalizer.get("clean_text"), True),
        "normalizer.handle_chinese_chars": (normalizer.get("handle_chinese_chars"), True)})
    lower_case, strip_accents = normalizer.get("lowercase"), normalizer.get("strip_accents")
    if not isinstance(lower_case, bool) or strip_accents not in (None, lower_case):
        raise ValueError(f"{path}: normalizer.lowercase {json.dumps(lower_case)} with "
                         f"strip_accents {json.dumps(strip_accents)}: keras_bert_core's "
                         "BertTokenizer strips accents exactly when it lower-cases")
    pre_tokenizer = spec.get("pre_tokenizer") or {}
    if pre_tokenizer.get("type") != "BertPreTokenizer":
        raise ValueError(f"{path}: pre_tokenizer {_kind(pre_tokenizer)} with a WordPiece "
                         "model: keras_bert_core's BertTokenizer reproduces BertPreTokenizer "
                         "only")
    vocabulary = _vocabulary(path, model)
    tokens = sorted(vocabulary, key=vocabulary.get)
    if [vocabulary[t] for t in tokens] != list(range(len(tokens))):
        raise ValueError(f"{path}: model.vocab's ids are not 0 to {len(tokens) - 1}, one per "
                         "token: a WordPiece vocabulary lists every id")
    _check_added_tokens(path, spec, vocabulary)
    return VocabularySource(WORDPIECE, tokens, options={"lower_case": lower_case},
                            read_from=path)


def check_bert_tokenizer_config(path, config, lower_case):
    """transformers rebuilds a BERT tokenizer.json's normalizer from tokenizer_config.json's
    `do_lower_case`, `strip_accents` and `tokenize_chinese_chars`: the casing becomes the
    tokenizer's `lower_case`; the other two are refused where the package's BertTokenizer
    does otherwise.

    Example:
    >>> check_bert_tokenizer_config("tokenizer_config.json", {"strip_accents": None}, True)
    >>> try:
    ...     check_bert_tokenizer_config("tokenizer_config.json", {"strip_accents": False}, True)
    ... except ValueError as error:
    ...     print(str(error).split(":")[1])
     strip_accents false with lower-casing
    """
    strip_accents = config.get("strip_accents")
    if strip_accents not in (None, lower_case):
        raise ValueError(f"{path}: strip_accents {json.dumps(strip_accents)} with"
                         f"{'' if lower_case else 'out'} lower-casing: keras_bert_core's "
                         "BertTokenizer strips accents exactly when it lower-cases")
    if config.get("tokenize_chinese_chars", True) is not True:
        raise ValueError(f"{path}: tokenize_chinese_chars is "
                         f"{json.dumps(config['tokenize_chinese_chars'])}; keras_bert_core's "
                         "BertTokenizer always splits CJK characters")


def _byte_pair(path, spec, model):
    pre_tokenizer = spec.get("pre_tokenizer") or {}
    if pre_tokenizer.get("type") != "ByteLevel":
        raise ValueError(f"{path}: a BPE model with pre_tokenizer {_kind(pre_tokenizer)}: "
                         "keras_bert_core reads byte-level BPE (ByteLevel) only")
    normalizer = spec.get("normalizer") or None
    if normalizer is not None and normalizer != {"type": "NFC"}:
        raise ValueError(f"{path}: normalizer {_kind(normalizer)} with byte-level BPE: "
                         "keras_bert_core's BytePairTokenizer reproduces no normalizer or NFC")
    _refuse_others(path, {
        "pre_tokenizer.add_prefix_space": (pre_tokenizer.get("add_prefix_space"), False),
        "pre_tokenizer.use_regex": (pre_tokenizer.get("use_regex", True), True),
        "model.dropout": (model.get("dropout"), None),
        "model.continuing_subword_prefix": (model.get("continuing_subword_prefix") or "", ""),
        "model.end_of_word_suffix": (model.get("end_of_word_suffix") or "", ""),
        "model.byte_fallback": (bool(model.get("byte_fallback")), False),
        "model.ignore_merges": (bool(model.get("ignore_merges")), False)})
    merges = model.get("merges")
    if not isinstance(merges, list) or not all(
            isinstance(m, str) or (isinstance(m, list) and len(m) == 2
                                   and all(isinstance(s, str) for s in m)) for m in merges):
        raise ValueError(f"{path}: model.merges is not a list of 'a b' strings or [a, b] pairs")
    vocabulary, added_tokens = byte_pair_added_tokens(path, spec, _vocabulary(path, model),
                                                      normalizer is not None)
    options = {}
    if normalizer is not None:
        options["normalization"] = "NFC"
    if added_tokens:
        options["added_tokens"] = added_tokens
    return VocabularySource(BYTE_PAIR, vocabulary,
                            [m if isinstance(m, str) else " ".join(m) for m in merges],
                            options=options, read_from=path)


def byte_pair_added_tokens(path, spec, vocabulary, normalizes):
    """A BPE `tokenizer.json`'s added tokens: the vocabulary with those `model.vocab` lacks
    (ModernBERT's [UNK] [CLS] [SEP] [PAD] [MASK] and [unused*] past its 50,280 tokens), and
    the non-special ones, which `tokenizers` finds in the normalized text before
    pre-tokenizing (ModernBERT's runs of spaces, `|||EMAIL_ADDRESS|||`...).

    An added token keeps `model.vocab`'s id where `model.vocab` has it, and takes an id no
    other token has where it does not. A non-special one must be a plain string to find:
    `lstrip`, `rstrip` and `single_word` false, `normalized` true beside a normalizer.
    Special tokens are never found in text, whatever their settings (the package's
    tokenizers read text as `split_special_tokens=True` does).

    Example:
    >>> spec = {"added_tokens": [
    ...     {"id": 3, "content": "  ", "special": False, "normalized": True},
    ...     {"id": 9, "content": "[CLS]", "special": True, "lstrip": True}]}
    >>> byte_pair_added_tokens("tokenizer.json", spec, {"a": 0, "b": 1, "ab": 2}, True)
    ({'a': 0, 'b': 1, 'ab': 2, '  ': 3, '[CLS]': 9}, ['  '])
    """
    vocabulary = dict(vocabulary)
    tokens = {i: t for t, i in vocabulary.items()}
    found = []
    for token in spec.get("added_tokens") or []:
        content, token_id = token.get("content"), token.get("id")
        if not isinstance(content, str) or not content or not isinstance(token_id, int) \
                or token_id < 0:
            raise ValueError(f"{path}: added token {json.dumps(token)} has no content or id")
        if content in vocabulary and vocabulary[content] != token_id:
            raise ValueError(f"{path}: added token {content!r} has id {token_id}, model.vocab "
                             f"{vocabulary[content]}")
        if content not in vocabulary and token_id in tokens:
            raise ValueError(f"{path}: added token {content!r} has id {token_id}, which "
                             f"model.vocab gives {tokens[token_id]!r}")
        vocabulary[content], tokens[token_id] = token_id, content
        if token.get("special", False):
            continue
        for field in ("lstrip", "rstrip", "single_word"):
            if token.get(field, False):
                raise ValueError(f"{path}: added token {content!r} has {field} true: "
                                 "keras_bert_core finds non-special added tokens as plain "
                                 "strings only")
        if normalizes and token.get("normalized", True) is not True:
            raise ValueError(f"{path}: added token {content!r} has normalized false beside "
                             "the normalizer: keras_bert_core finds non-special added tokens "
                             "in normalized text only")
        found.append(content)
    return vocabulary, found


def _refuse_others(path, settings):
    """One line for the first setting whose value is not the one the tokenizer has."""
    for name, (value, wanted) in settings.items():
        if value != wanted:
            raise ValueError(f"{path}: {name} is {json.dumps(value)}; keras_bert_core's "
                             f"tokenizer reproduces {json.dumps(wanted)} only")


def _vocabulary(path, model):
    vocabulary = model["vocab"]
    if not isinstance(vocabulary, dict) or not vocabulary or not all(
            isinstance(i, int) and i >= 0 for i in vocabulary.values()):
        raise ValueError(f"{path}: model.vocab is not a map of tokens to ids")
    return vocabulary


def _check_added_tokens(path, spec, vocabulary):
    """Added tokens must be vocabulary tokens; non-special ones are matched in text before
    tokenizing, which the package's tokenizers do not do."""
    for token in spec.get("added_tokens") or []:
        content, token_id = token.get("content"), token.get("id")
        if vocabulary.get(content) != token_id:
            raise ValueError(f"{path}: added token {content!r} (id {token_id}) is not in "
                             "model.vocab with that id: keras_bert_core reads the model's "
                             "vocabulary only")
        if not token.get("special", False):
            raise ValueError(f"{path}: added token {content!r} is not special: the reference "
                             "finds it in text before tokenizing, which keras_bert_core does "
                             "not do")


def _kind(step):
    return json.dumps(step.get("type")) if step else "null"
