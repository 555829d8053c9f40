"""Byte-level BPE vocabulary files (RoBERTa, GPT-2): `vocab.json`, `merges.txt`, and the
byte symbols their tokens are written in."""

import json

import tensorflow as tf

# RoBERTa's special tokens, in its id order (<mask> follows them here, last in RoBERTa).
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


def bytes_to_unicode():
    """GPT-2's byte symbols: the character that stands for each byte value in a vocabulary.

    Printable Latin-1 bytes stand for themselves; the others (control characters, space,
    DEL, NBSP, soft hyphen) take the characters from U+0100 up, in byte order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    symbols = {}
    shifted = 0
    for byte in range(256):
        if byte in printable:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + shifted)
            shifted += 1
    return symbols


def load_bpe_vocabulary(vocabulary):
    """A `{token: id}` dict from a `vocab.json` path or a dict."""
    if isinstance(vocabulary, dict):
        vocab = dict(vocabulary)
    else:
        with tf.io.gfile.GFile(str(vocabulary), "r") as f:
            vocab = json.load(f)
    if not vocab or not all(isinstance(t, str) and isinstance(i, int) and i >= 0
                            for t, i in vocab.items()):
        raise ValueError("The vocabulary must map tokens (strings) to ids (integers >= 0).")
    return {token: int(i) for token, i in vocab.items()}


def load_bpe_merges(merges):
    """The merges in rank order, as `"left right"` strings, from a `merges.txt` path or a
    list of strings or pairs. A `#version` line is skipped, as blank lines are."""
    if isinstance(merges, (list, tuple)):
        lines = [m if isinstance(m, str) else " ".join(m) for m in merges]
    else:
        with tf.io.gfile.GFile(str(merges), "r") as f:
            lines = f.read().split("\n")
    lines = [line.rstrip("\r") for line in lines]
    lines = [line for line in lines if line and not line.startswith("#version")]
    for rank, line in enumerate(lines):
        if len(line.split(" ")) != 2:
            raise ValueError(f"Merge {rank} is not two symbols separated by one space: {line!r}")
    return lines
