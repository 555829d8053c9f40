"""The SentencePiece tokenizers of ALBERT (`spiece.model`) and XLM-RoBERTa
(`sentencepiece.bpe.model`, fairseq's ids)."""
