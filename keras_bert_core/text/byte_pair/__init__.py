"""The byte-level BPE tokenizer of RoBERTa (`byte_pair_tokenizer`) and its `vocab.json`
and `merges.txt` (`vocabulary`)."""
