"""Vocabulary files of every tokenizer: found and written (`files`), kept as `.keras` assets
(`assets`), learned from text files (`learning`)."""
