"""Seeded fuzz inputs for the tokenizers, and the real-text corpora of the repository.

`fuzz_texts` mixes what breaks tokenizers: code points from every plane (unassigned and
private use included), control and format characters, stacks of combining marks (old and
newer ones), invalid UTF-8, words of thousands of characters, Unicode whitespace, CJK and
Hangul, compatibility characters and plain ASCII. Items are `bytes` (UTF-8 or not); the
reference reads them as `bytes.decode("utf-8", "replace")`.
"""

import json
import pathlib
import random

from keras_bert_core.cli import demo_corpus

DATA = pathlib.Path(__file__).with_name("data")

_ASCII_WORDS = ["the", "Quick", "fox", "isn't", "3.14", "e-mail", "U.S.A.", "(x)", "#tag",
                "50%", "$12", "don't", "C++", "foo_bar", "a/b", "..."]
_SAMPLES = ("™½…—ßςﬁ²³ＡＢ１！，。「」漢字日本語한국어군ßİıΣσςÅéñçøæœ"
            "¿¡«»“”‘’•·°±×÷€£¥©®§¶†‡‰′″‹›⁄⁰₀ⅠⅫ①⑴㈱㍻ｶﾞ゛ーｰ・")
_COMBINING = ([chr(c) for c in range(0x300, 0x370)] + [chr(c) for c in range(0x1AB0, 0x1B00)]
              + [chr(c) for c in range(0x1DC0, 0x1E00)] + ["\u0e31", "\u093f", "\u1734"])
_SPECIAL = ["\x00", "\x0b", "\x0c", "\x1f", "\x7f", "\x85", "\xa0", "\xad", "\u200b",
            "\u200d", "\u2028", "\u2029", "\u3000", "\ufeff", "\ufffd", "\ue000", "\U000f0000",
            "\t", "\n", "\r", " ", "\u180e", "\u061c", "\U000e0001"]
_INVALID = [b"\x80", b"\xc0\xaf", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xff", b"\xfe", b"\xf0\x9f\x98", b"\xc2"]


def _random_code_point(rng):
    plane = rng.choice([0, 0, 0, 0, 1, 2, 3, rng.randrange(4, 17)])
    while True:
        c = plane * 0x10000 + rng.randrange(0x10000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def _piece(rng):
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice(_ASCII_WORDS)
    if kind == 1:
        return "".join(_random_code_point(rng) for _ in range(rng.randint(1, 6)))
    if kind == 2:
        return rng.choice(_ASCII_WORDS + list(_SAMPLES)) + "".join(
            rng.choice(_COMBINING) for _ in range(rng.randint(1, 6)))
    if kind == 3:
        return "".join(rng.choice(_SPECIAL) for _ in range(rng.randint(1, 3)))
    if kind == 4:
        return "".join(rng.choice(_SAMPLES) for _ in range(rng.randint(1, 5)))
    if kind == 5:
        return rng.choice(_ASCII_WORDS) + rng.choice(_SPECIAL) + rng.choice(_ASCII_WORDS)
    if kind == 6:
        return chr(rng.randrange(0xAC00, 0xD7A4)) + chr(rng.randrange(0x4E00, 0xA000))
    if kind == 7:
        return "".join(chr(rng.randrange(0x20, 0x7F)) for _ in range(rng.randint(1, 8)))
    return rng.choice(["a", "é", "漢", "e\u0301", "ß"]) * rng.choice([99, 100, 101, 150])


def fuzz_texts(count, seed=0):
    """`count` fuzz inputs (bytes); every 50th holds a word of 5,000 characters."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        pieces = [_piece(rng) for _ in range(rng.randint(0, 12))]
        if i % 50 == 49:
            pieces.append(rng.choice(["x", "ä", "語", "\U0001f600"]) * 5000)
        text = rng.choice(["", " ", "\t", "\n"]).join(pieces).encode("utf-8")
        if rng.random() < 0.15:  # break the UTF-8 somewhere
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(_INVALID) + text[at:]
        texts.append(text)
    return texts


def as_reference_text(text):
    """What the reference reads: invalid UTF-8 as U+FFFD."""
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else text


def tokenizer_corpus():
    """The lines of tests/text/data/tokenizer_corpus.jsonl."""
    # Iterating the file splits on "\n" only; str.splitlines would also split on U+2028.
    with open(DATA / "tokenizer_corpus.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def real_text_corpora():
    """The repository's real text, by corpus name: the tokenizer corpus, the standard
    library's docstrings (the demo corpus) and every string of the task data files."""
    docstrings = [d.text for d in demo_corpus.read_docstrings()]
    task_texts = []
    for path in sorted((DATA / "tasks").iterdir()):
        if path.name == "vocab.txt":
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            task_texts.extend(_strings(json.loads(text)))
        elif path.suffix == ".jsonl":
            task_texts.extend(s for line in text.splitlines() if line.strip()
                              for s in _strings(json.loads(line)))
        else:
            task_texts.extend(line for line in text.split("\n") if line)
    return {"tokenizer_corpus": tokenizer_corpus(), "stdlib_docstrings": docstrings,
            "task_data": task_texts}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
