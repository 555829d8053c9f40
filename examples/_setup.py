"""What the example scripts share: an encoder and its vocabulary, pretrained or tiny."""

import os

import keras_bert_core as kbc
from keras_bert_core.text import load_vocabulary


def learning_rate(checkpoint):
    """The fine-tuning learning rate for an encoder from `checkpoint`: pretrained weights take
    BERT's small steps (at the tiny encoder's rate a pretrained MiniLM stayed at chance on
    finetune_classifier.py's pairs); a random tiny encoder (None) learns faster at 1e-3."""
    return 1e-4 if checkpoint else 1e-3


def encoder_and_vocab(checkpoint, vocab):
    """`(encoder, vocab path)`: the checkpoint's encoder and the vocab.txt beside it, or,
    without a checkpoint, a random `tiny` encoder sized for `vocab`."""
    if checkpoint:
        encoder, _ = kbc.load_checkpoint(checkpoint)
        folder = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
        return encoder, os.path.join(folder, "vocab.txt")
    size = len(load_vocabulary(vocab))
    return kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=size)), vocab
