"""Vocabulary files of every tokenizer: read (`wordpiece_vocabulary`, `byte_pair_vocabulary`;
a SentencePiece model is read by its tokenizer), found and written (`files`), kept as
`.keras` assets (`assets`), learned from text files (`learning`), told apart by their
fingerprint and casing (`identity`)."""
