"""The WordPiece tokenizer of BERT and DistilBERT (`bert_tokenizer`); its `vocab.txt` is read
by `text.vocabulary.wordpiece_vocabulary`."""
