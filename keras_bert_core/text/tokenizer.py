"""The base of the package's tokenizers (WordPiece, byte-level BPE, SentencePiece)."""

import tensorflow as tf

from keras_bert_core.text.preprocessing_layer import PreprocessingLayer
from keras_bert_core.text.special_tokens import SpecialTokenIds
from keras_bert_core.text.string_batches import as_batch, keep_static_batch_size
from keras_bert_core.text.vocabulary.assets import VocabularyAssets


class Tokenizer(VocabularyAssets, SpecialTokenIds, PreprocessingLayer):
    """Base of the package's tokenizer layers: strings in, ids out (`PreprocessingLayer`),
    the ids of the special tokens (`SpecialTokenIds`), the vocabulary files as `.keras`
    assets (`VocabularyAssets`).

    Each subclass sets `vocabulary_kind`, the kind of vocabulary files it is made from
    (one of `text.vocabulary.files.TOKENIZER_KINDS`): what the preprocessor packs and the
    files written for it follow from it. It tokenizes a batch of texts in
    `_tokenize(text, with_offsets)`, which returns `(ids,)` or `(ids, starts, ends)`;
    this class takes the inputs (`call`, `tokenize_with_offsets`).

    Example:
    >>> from keras_bert_core.text import BertTokenizer, BytePairTokenizer
    >>> BertTokenizer.vocabulary_kind, BytePairTokenizer.vocabulary_kind
    ('wordpiece', 'byte_pair')
    """

    vocabulary_kind = None

    def call(self, inputs):
        """Tokenizes strings.

        Args:
            inputs: a string, a list of strings or a string tensor of rank 0 or 1.

        Returns:
            int32 `tf.RaggedTensor` [batch, (tokens)] for a batch, or an int32 `tf.Tensor`
            [tokens] for a single string.
        """
        self._check_vocabulary()
        text, single = as_batch(inputs)
        (ids,) = self._tokenize_once_traced(text, with_offsets=False)
        keep_static_batch_size(ids, text)
        return ids[0] if single else ids

    def tokenize_with_offsets(self, inputs):
        """Tokenizes strings and locates every token in its input string.

        Args:
            inputs: a list of strings or a 1-D string tensor.

        Returns:
            `(token_ids, start_offsets, end_offsets)`: ragged [batch, (tokens)] tensors of
            int32, int64, int64. `inputs[i][start:end]` (in bytes) is the input text the
            token comes from (the subclass's docstring says which, under Offsets).
        """
        self._check_vocabulary()
        text, single = as_batch(inputs)
        if single:
            raise ValueError("tokenize_with_offsets takes a batch (list or 1-D tensor) of strings.")
        outputs = self._tokenize_once_traced(text, with_offsets=True)
        for x in outputs:
            keep_static_batch_size(x, text)
        return outputs

    def _tokenize_once_traced(self, text, with_offsets):
        """`_tokenize`; in a graph, a call of one `tf.function` traced once per tokenizer and
        mode. Its graph is hundreds to thousands of string ops, which every graph that
        tokenizes (a pair's second text, `fit`'s and `predict`'s datasets, each export
        signature) would otherwise build again in Python (bench/tokenizer_trace_time.py).
        The call is inlined when the graph runs, so what runs is what ran before. The TFLite
        route stays inline: the converter reads it as it is."""
        if tf.executing_eagerly() or getattr(self, "tflite_compatible", False):
            return self._tokenize(text, with_offsets)
        # In a plain object's dict: neither Keras's attribute tracking nor a SavedModel's
        # (which would save the functions as the layer's own) looks there.
        functions = self.__dict__.setdefault("_traced_functions", _Untracked()).functions
        traced = functions.get(with_offsets)
        if traced is None:
            with tf.init_scope():  # traced outside the calling graph: every graph can call it
                traced = tf.function(lambda batch: self._tokenize(batch, with_offsets),
                                     autograph=False).get_concrete_function(
                    tf.TensorSpec([None], tf.string))
            functions[with_offsets] = traced
        return traced(text)


class _Untracked:
    """Functions held where attribute tracking does not look."""

    def __init__(self):
        self.functions = {}
