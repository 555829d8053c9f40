"""Vocabulary files of every tokenizer: read (`wordpiece_vocabulary`, `byte_pair_vocabulary`,
Hugging Face's `tokenizer.json` in `tokenizer_json`; a SentencePiece model is read by its
tokenizer), their kinds (`kinds`), found and written (`files`), kept as `.keras` assets
(`assets`), learned from text files (`learning`), told apart by their fingerprint and casing
(`identity`)."""
