"""The byte-level BPE tokenizer of RoBERTa (`byte_pair_tokenizer`); its `vocab.json` and
`merges.txt` are read by `text.vocabulary.byte_pair_vocabulary`."""
