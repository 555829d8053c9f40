"""ALBERT's preprocessing (`preprocess_text`: whitespace, quotes, accents, lower case) as a
table of every code point, made from Python's `unicodedata`, and applied in the graph."""

import functools
import unicodedata

import numpy as np
import tensorflow as tf

from keras_bert_core.text.character_table import BLOCK_SIZE, NUM_CODE_POINTS
from keras_bert_core.text.tflite_tokenization import _positions, _shift, row_ids

# What ALBERT's preprocessing does with a character (the table's low 3 bits).
_SAME, _MAPPED, _SPACE, _BACKTICK, _APOSTROPHE, _SIGMA = range(6)
# What the final-sigma rule sees at each end of a character's output (2 bits each): nothing
# (empty or case-ignorable only), a cased character, or another one.
_IGNORED, _CASED, _UNCASED = range(3)
_KIND_BITS, _CLASS_BITS = 8, 4
_SPELLING_UNIT = _KIND_BITS * _CLASS_BITS * _CLASS_BITS
SPACE_CHAR, _QUOTE_CHAR, _SMALL_SIGMA, _FINAL_SIGMA = 0x20, 0x22, 0x3C3, 0x3C2


def _case_properties(chars):
    """`(case_ignorable, cased)` of each character, as Python's `str.lower` sees them for
    the final-sigma rule (not exposed otherwise): a case-ignorable character after "AΣ" is
    skipped, so the sigma is final before a following "|" and not before an "A"."""
    ignorable, cased = {}, {}
    for c in chars:
        lowered_before_bar = ("AΣ" + c + "|").lower()[1]
        lowered_before_a = ("AΣ" + c + "A").lower()[1]
        ignorable[c] = lowered_before_bar == "ς" and lowered_before_a == "σ"
        cased[c] = lowered_before_bar == "σ"
    return ignorable, cased


def _end_class(chars, ignorable, cased):
    for c in chars:
        if not ignorable[c]:
            return _CASED if cased[c] else _UNCASED
    return _IGNORED


@functools.lru_cache(maxsize=4)
def albert_character_table(lower_case, keep_accents, replace_quotes=True):
    """ALBERT's preprocessing of every code point, from Python's `unicodedata`; without
    `replace_quotes`, backticks and apostrophes stay themselves (DeBERTa's tokenizer
    collapses whitespace alone).

    Returns:
        `(block_of, entries, spelling_splits, spelling_values)`, int32 arrays. For a code
        point `c`, element `block_of[c // BLOCK_SIZE] * BLOCK_SIZE + c % BLOCK_SIZE` of
        `entries` is `kind + 8 * (left + 4 * right) + 128 * spelling`: what happens to it
        (`_SAME`: itself; `_MAPPED`: the code points
        `spelling_values[spelling_splits[spelling]:spelling_splits[spelling + 1]]`, maybe
        none; `_SPACE`; a quote; `_SIGMA`: σ or ς) and, lower-casing, the final-sigma class
        of its output's first and last characters.
    """
    kinds = np.full(NUM_CODE_POINTS, _SAME, np.int32)
    classes = np.full(NUM_CODE_POINTS, _UNCASED * (1 + _CLASS_BITS), np.int32)
    spelling = np.zeros(NUM_CODE_POINTS, np.int32)
    # Unassigned, private-use and surrogate code points: themselves, uncased (the default).
    assigned = [chr(c) for c in range(NUM_CODE_POINTS)
                if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")]
    ignorable, cased = _case_properties(assigned) if lower_case else ({}, {})
    spellings = {(): 0}
    for c in assigned:
        code = ord(c)
        if c.isspace():
            kinds[code] = _SPACE
            continue
        if replace_quotes and c in "`'":
            kinds[code] = _BACKTICK if c == "`" else _APOSTROPHE
            classes[code] = _IGNORED  # case-ignorable, unless paired (set in the graph)
            continue
        text = c
        if not keep_accents:
            text = "".join(x for x in unicodedata.normalize("NFKD", c)
                           if not unicodedata.combining(x))
        if lower_case:
            classes[code] = (_end_class(text, ignorable, cased) + _CLASS_BITS
                             * _end_class(reversed(text), ignorable, cased))
            if text == "Σ":
                kinds[code] = _SIGMA
                continue
            # An output that holds Σ among other characters (none in Unicode 14) takes the
            # sigma that it gives on its own.
            text = text.lower()
        if text != c:
            kinds[code] = _MAPPED
            spelling[code] = spellings.setdefault(tuple(map(ord, text)), len(spellings))
    entries = kinds + _KIND_BITS * classes + _SPELLING_UNIT * spelling
    blocks, block_of = np.unique(entries.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    values = [code for chars in spellings for code in chars]
    splits = np.cumsum([0] + [len(chars) for chars in spellings])
    return (block_of.astype(np.int32).ravel(), blocks.astype(np.int32).ravel(),
            splits.astype(np.int32), np.array(values or [0], np.int32))


def albert_output_chars(lower_case, keep_accents):
    """The code points that ALBERT's preprocessing can put in a text."""
    block_of, entries, _, values = albert_character_table(lower_case, keep_accents)
    code_points = np.arange(NUM_CODE_POINTS)
    kinds = entries[block_of[code_points // BLOCK_SIZE] * BLOCK_SIZE
                    + code_points % BLOCK_SIZE] % _KIND_BITS
    kept = np.flatnonzero((kinds == _SAME) | (kinds == _BACKTICK) | (kinds == _APOSTROPHE))
    return set(kept.tolist()) | set(values.tolist()) | {
        SPACE_CHAR, _QUOTE_CHAR, _SMALL_SIGMA, _FINAL_SIGMA}


class AlbertPreprocessing(tf.Module):
    """ALBERT's preprocessing of flat characters, with index arithmetic that TFLite's
    builtins have. Called on `Characters`, it returns the preprocessed texts' code points
    (flat int32), the character each comes from and their row splits; `with_spans` adds,
    per character, the byte offset in its text where the input span of its output ends.
    Without `replace_quotes`, quote pairs stay as they are."""

    def __init__(self, lower_case, keep_accents, replace_quotes=True):
        super().__init__()
        self._lower_case = lower_case
        self.albert_settings = (lower_case, keep_accents)
        block_of, entries, splits, values = albert_character_table(lower_case, keep_accents,
                                                                   replace_quotes)
        self._block_of = tf.constant(block_of)
        self._entries = tf.constant(entries)
        self._spelling_splits = tf.constant(splits)
        self._spelling_lengths = tf.constant(splits[1:] - splits[:-1])
        self._spelling_values = tf.constant(values)

    def __call__(self, chars, with_spans=False):
        code_points, rows = chars.code_points, chars.rows
        entry = tf.gather(self._entries, tf.gather(self._block_of, code_points // BLOCK_SIZE)
                          * BLOCK_SIZE + code_points % BLOCK_SIZE)
        kind = entry % _KIND_BITS
        after_same_row = _shift(rows, -1, fill=-1) == rows
        # A whitespace run becomes one space, unless it starts or ends its text.
        space = kind == _SPACE
        text_chars = tf.pad(tf.cumsum(tf.cast(~space, tf.int32)), [[1, 0]])
        before = tf.slice(text_chars, [0], tf.shape(kind))
        kept_space = (space & ~(_shift(space, -1, fill=False) & after_same_row)
                      & (before > tf.gather(text_chars, tf.gather(chars.row_splits, rows)))
                      & (tf.gather(text_chars, tf.gather(chars.row_splits, rows + 1)) > before))
        # In a run of equal quotes, pairs from the left become one '"'.
        quote = (kind == _BACKTICK) | (kind == _APOSTROPHE)
        continues = quote & (_shift(kind, -1, fill=-1) == kind) & after_same_row
        run_start = quote & ~continues
        run = tf.maximum(tf.cumsum(tf.cast(run_start, tf.int32)) - 1, 0)
        in_run = tf.range(tf.size(kind)) - tf.gather(
            tf.pad(_positions(run_start), [[0, 1]]), run)
        second = continues & (in_run % 2 == 1)
        first = quote & (in_run % 2 == 0) & _shift(continues, 1, fill=False)

        single = tf.where(kept_space, SPACE_CHAR, code_points)
        single = tf.where(first, _QUOTE_CHAR, single)
        if self._lower_case:
            final = _final_sigma(entry, rows, first, second)
            single = tf.where(kind == _SIGMA, tf.where(final, _FINAL_SIGMA, _SMALL_SIGMA),
                              single)
        spelling = entry // _SPELLING_UNIT
        mapped = kind == _MAPPED
        counts = tf.where(mapped, tf.gather(self._spelling_lengths, spelling), 1)
        counts = tf.where((space & ~kept_space) | second, 0, counts)
        splits = tf.pad(tf.cumsum(counts), [[1, 0]])
        sources = row_ids(splits)
        within = tf.range(tf.size(sources)) - tf.gather(splits, sources)
        spelled = tf.gather(self._spelling_values, tf.gather(
            self._spelling_splits, tf.gather(spelling, sources)) + within)
        out_chars = tf.where(tf.gather(mapped, sources), spelled, tf.gather(single, sources))
        outputs = (out_chars, sources, tf.gather(splits, chars.row_splits))
        if not with_spans:
            return outputs
        # Characters without output (removed ones, a pair's second quote) join the span of
        # the output before them; whitespace does not.
        following, exists = _nearest(space | (counts > 0), rows, after=True)
        span_ends = tf.where(exists, tf.gather(chars.starts, following),
                             tf.gather(chars.text_lengths, rows))
        return (*outputs, span_ends)


def _nearest(marked, rows, after):
    """For each position of a 1-D mask, the nearest marked position after it (`after`) or
    before it, and whether there is one in the same row."""
    marked_int = tf.cast(marked, tf.int32)
    counts = tf.cumsum(marked_int)
    index = counts if after else counts - marked_int - 1
    found = tf.gather(tf.pad(_positions(marked), [[0, 1]]), tf.maximum(index, 0))
    exists = (index >= 0) & (index < tf.reduce_sum(marked_int))
    return found, exists & (tf.gather(rows, found) == rows)


def _final_sigma(entry, rows, first, second):
    """Whether each character, if a capital sigma, is final: after a cased character and
    not before one, case-ignorable ones skipped (Python's `str.lower`)."""
    left = entry // _KIND_BITS % _CLASS_BITS
    right = entry // (_KIND_BITS * _CLASS_BITS) % _CLASS_BITS
    # A pair of quotes is an uncased '"'; its second quote is gone.
    left = tf.where(first, _UNCASED, tf.where(second, _IGNORED, left))
    right = tf.where(first, _UNCASED, tf.where(second, _IGNORED, right))
    before, has_before = _nearest(right != _IGNORED, rows, after=False)
    after, has_after = _nearest(left != _IGNORED, rows, after=True)
    return (has_before & (tf.gather(right, before) == _CASED)
            & ~(has_after & (tf.gather(left, after) == _CASED)))
