"""Writes keras_bert_core/text/character_table.npz, the TFLite-compatible tokenizer's table of
what the reference normalization makes of every code point (see character_table.py).

Run it after changing the reference pipeline's character classes in tokenizer.py:

    python scripts/make_character_table.py
"""

from keras_bert_core.text.character_table import TABLE_FILE, write_table

if __name__ == "__main__":
    write_table()
    print(f"wrote {TABLE_FILE}")
