"""The WordPiece tokenizer of BERT and DistilBERT (`bert_tokenizer`) and its `vocab.txt`."""
