"""The normalization table of the TFLite-compatible tokenizer."""

import numpy as np
import pytest

from keras_bert_core.text import character_table as table
from keras_bert_core.text.character_normalization import (
    ISOLATED_CHAR,
    REMOVED_CHAR,
    WHITESPACE_CHAR,
    WORD_CHAR,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "e", "##e", "ᄀ", "##ᅮ", "##ᆫ", "!"]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_table_file_equals_the_reference_normalization(lower_case):
    # `python -m keras_bert_core.text.character_table` writes the file from the character
    # route's own normalization; after a change there the file must be made again.
    kinds, normalized = table.compute_normalization(lower_case)
    shipped_kinds, shipped = table.load_normalization(lower_case)
    np.testing.assert_array_equal(shipped_kinds, kinds)
    kept = kinds != REMOVED_CHAR
    np.testing.assert_array_equal(shipped[kept], normalized[kept])
    assert normalized.shape[1] == (3 if lower_case else 1)  # Hangul syllables: 3 jamo


def lookup(block_of, entries, spellings, alphabet, char):
    code_point = ord(char)
    entry = entries[block_of[code_point // table.BLOCK_SIZE] * table.BLOCK_SIZE
                    + code_point % table.BLOCK_SIZE]
    return entry % 4, "".join(alphabet[i - 1] for i in spellings[entry // 4] if i)


def test_vocabulary_table_spells_each_character_with_the_vocabulary_alphabet():
    block_of, entries, spellings, alphabet = table.vocabulary_table(VOCAB, lower_case=True)
    placeholder = alphabet[0]
    assert not any(placeholder in token for token in VOCAB)
    assert set(alphabet[1:]) == set("".join(t.removeprefix("##") for t in VOCAB))

    def spell(char):
        return lookup(block_of, entries, spellings, alphabet, char)

    assert spell("É") == (WORD_CHAR, "e")
    assert spell("군") == (WORD_CHAR, "군")
    assert spell("!") == (ISOLATED_CHAR, "!")
    assert spell("ß") == (WORD_CHAR, placeholder)  # in no token: its word is [UNK]
    assert spell("漢") == (ISOLATED_CHAR, placeholder)
    assert spell("\u3000") == (WHITESPACE_CHAR, "")
    assert spell("\u200b") == (REMOVED_CHAR, "")
    assert spell("\ue000") == (REMOVED_CHAR, "")
    cased = table.vocabulary_table(VOCAB, lower_case=False)
    assert lookup(*cased, "É") == (WORD_CHAR, cased[3][0])
