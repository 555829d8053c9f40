"""tf.text's `FastWordpieceTokenizer`, built once per vocabulary and options in a process."""

import functools

import tensorflow as tf
import tensorflow_text as tf_text


def fast_wordpiece(vocabulary, **options):
    """`tf_text.FastWordpieceTokenizer(vocabulary, **options)`, one object for every caller
    that asks for the same vocabulary and options. Building its model (a trie of every
    token, and with pre-tokenization Unicode's punctuation) is most of what creating a
    tokenizer layer costs, even with a small vocabulary, and every tokenizer layer, `.keras`
    load and export builds one or two (bench/RESULTS.md, "Tokenizer start-up"). The object
    holds only that model, a constant tensor, so sharing it changes no result.

    Example:
    >>> a = fast_wordpiece(["[UNK]", "a", "##b"], no_pretokenization=True)
    >>> a is fast_wordpiece(("[UNK]", "a", "##b"), no_pretokenization=True)
    True
    >>> a.tokenize(["ab"]).to_list()
    [[1, 2]]
    """
    return _built(tuple(vocabulary), tuple(sorted(options.items())))


@functools.lru_cache(maxsize=16)
def _built(vocabulary, options):
    with tf.init_scope():  # an eager constant, whichever graph asked first
        return tf_text.FastWordpieceTokenizer(list(vocabulary), **dict(options))
