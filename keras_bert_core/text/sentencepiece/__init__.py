"""The SentencePiece tokenizer of ALBERT and its `spiece.model`."""
