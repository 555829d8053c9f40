"""Per-code-point normalization table of the TFLite-compatible tokenizer.

TFLite has no Unicode string ops, but the reference normalization works one code point at a
time, so a table says for every code point what the reference makes of it: removed,
whitespace, an isolated one-character word (punctuation, CJK ideograph) or a word character,
and the characters it normalizes to (uncased: NFD without accents, lower case; at most three,
a Hangul syllable's jamo). ``character_table.npz`` holds it for both casings; it is made from
the reference pipeline's own character normalization
(``character_normalization.normalize_characters``) by

    python -m keras_bert_core.text.character_table

(run it after changing the reference pipeline's character classes), and
``tests/text/test_character_table.py`` checks that it still agrees.

``vocabulary_table`` then turns it into what the graph looks up: per code point, its class
and the indices of its normalized characters in the vocabulary's alphabet, stored as
distinct blocks of 128 code points (most blocks repeat: unassigned, one class, no character
of the vocabulary).
"""

import os

import numpy as np

from keras_bert_core.text.character_normalization import (
    REMOVED_CHAR,
    WHITESPACE_CHAR,
    normalize_characters,
)

NUM_CODE_POINTS = 0x110000
BLOCK_SIZE = 128
TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "character_table.npz")
_CASINGS = {True: "uncased", False: "cased"}


def compute_normalization(lower_case):
    """`(kinds, normalized)` for every code point, from the reference pipeline's character
    normalization: uint8 [NUM_CODE_POINTS] classes and int32 [NUM_CODE_POINTS, width]
    normalized code points, 0-padded (surrogates are removed)."""
    import tensorflow as tf

    code_points = np.arange(NUM_CODE_POINTS, dtype=np.int32)
    code_points = code_points[(code_points < 0xD800) | (code_points > 0xDFFF)]
    raw = tf.strings.unicode_encode(code_points[:, np.newaxis], "UTF-8")
    chars, kind = normalize_characters(raw, lower_case)
    decoded = tf.strings.unicode_decode(chars, "UTF-8").to_tensor().numpy()
    kinds = np.zeros(NUM_CODE_POINTS, np.uint8)
    kinds[code_points] = kind.numpy()
    normalized = np.zeros((NUM_CODE_POINTS, decoded.shape[1]), np.int32)
    normalized[code_points] = decoded
    return kinds, normalized


def write_table(path=TABLE_FILE):
    """Writes both casings' normalization: classes, and the code points that do not
    normalize to themselves with what they normalize to."""
    arrays = {}
    for lower_case, casing in _CASINGS.items():
        kinds, normalized = compute_normalization(lower_case)
        identity = np.zeros_like(normalized)
        identity[:, 0] = np.arange(NUM_CODE_POINTS)
        changed = np.flatnonzero((kinds != REMOVED_CHAR) & (normalized != identity).any(1))
        arrays[f"{casing}_kinds"] = kinds
        arrays[f"{casing}_changed"] = changed.astype(np.int32)
        arrays[f"{casing}_normalized"] = normalized[changed]
    np.savez_compressed(path, **arrays)


def load_normalization(lower_case, path=TABLE_FILE):
    """`(kinds, normalized)` as `compute_normalization` returns them, from the table file
    (removed code points keep themselves in `normalized`: their class says they go)."""
    casing = _CASINGS[bool(lower_case)]
    with np.load(path) as table:
        kinds = table[f"{casing}_kinds"]
        changed = table[f"{casing}_changed"]
        replacements = table[f"{casing}_normalized"]
    normalized = np.zeros((NUM_CODE_POINTS, replacements.shape[1]), np.int32)
    normalized[:, 0] = np.arange(NUM_CODE_POINTS)
    normalized[changed] = replacements
    return kinds, normalized


def vocabulary_table(vocabulary, lower_case, suffix_indicator="##"):
    """The lookup tables of the TFLite-compatible pipeline for one vocabulary.

    Returns:
        `(block_of, entries, spellings, alphabet)`: `alphabet` lists the characters of the
        vocabulary's tokens, a placeholder absent from the vocabulary first (every other
        normalized character stands for it: its word can only be `[UNK]`). For a code point
        `c`, element `block_of[c // BLOCK_SIZE] * BLOCK_SIZE + c % BLOCK_SIZE` of `entries`
        is `kind + 4 * spelling`: its class, and the row of `spellings` that lists the
        alphabet indices of its normalized characters, each plus one (0: none). All int32.
    """
    chars = {c for token in vocabulary
             for c in (token[len(suffix_indicator):] if token.startswith(suffix_indicator)
                       else token)}
    # A private-use character: the reference removes them, so none is a normalized one.
    placeholder = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in chars)
    alphabet = [placeholder, *sorted(chars)]
    alphabet_points = np.array([ord(c) for c in alphabet[1:]], np.int32)
    kinds, normalized = load_normalization(lower_case)
    at = np.searchsorted(alphabet_points, normalized).clip(0, len(alphabet_points) - 1)
    index = np.where(alphabet_points[at] == normalized, at + 2, 1)  # 1: the placeholder
    index[(normalized == 0) | (kinds <= WHITESPACE_CHAR)[:, np.newaxis]] = 0  # in no word
    # Few distinct spellings (each alphabet character, the placeholder, Hangul syllables):
    # number them through one int64 key per row.
    key = np.zeros(NUM_CODE_POINTS, np.int64)
    for column in index.T:
        key = key * (len(alphabet) + 1) + column
    keys = np.unique(key)
    spelling = np.searchsorted(keys, key)  # cheaper than unique's argsort (return_inverse)
    spellings = np.zeros((len(keys), index.shape[1]), np.int32)
    spellings[spelling] = index
    entries = (kinds.astype(np.int32) + 4 * spelling.astype(np.int32)).reshape(-1, BLOCK_SIZE)
    # Distinct blocks found as one bytes value each: numpy's row-wise unique (axis=0) compares
    # them field by field, far slower (bench/RESULTS.md, Tokenizer start-up). Their order is
    # any fixed one.
    as_bytes = entries.view(np.dtype((np.void, entries.itemsize * BLOCK_SIZE))).ravel()
    _, first, block_of = np.unique(as_bytes, return_index=True, return_inverse=True)
    return block_of.astype(np.int32).ravel(), entries[first].ravel(), spellings, alphabet


if __name__ == "__main__":
    write_table()
    print(f"wrote {TABLE_FILE}")
