"""What the example scripts share: an encoder and its vocabulary, pretrained or tiny."""

import os

import keras_bert_core as kbc
from keras_bert_core.text import load_vocabulary


def encoder_and_vocab(checkpoint, vocab):
    """`(encoder, vocab path)`: the checkpoint's encoder and the vocab.txt beside it, or,
    without a checkpoint, a random `tiny` encoder sized for `vocab`."""
    if checkpoint:
        encoder, _ = kbc.load_checkpoint(checkpoint)
        folder = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
        return encoder, os.path.join(folder, "vocab.txt")
    size = len(load_vocabulary(vocab))
    return kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=size)), vocab
