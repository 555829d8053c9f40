"""XLM-RoBERTa's tokenizer: a SentencePiece model read through fairseq's dictionary, inside
the TensorFlow graph."""

import keras
import numpy as np
import tensorflow as tf
from sentencepiece import sentencepiece_model_pb2

from keras_bert_core.text.sentencepiece.raw_text import RawText
from keras_bert_core.text.sentencepiece.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_core.text.vocabulary.kinds import FAIRSEQ_SENTENCEPIECE

# fairseq's dictionary starts with these four; the model's own pieces follow, `<mask>` last.
_FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
# The SentencePiece model's first pieces (its defaults: unk, bos, eos), which fairseq's
# dictionary replaces with its own.
_MODEL_SPECIALS = ("<unk>", "<s>", "</s>")


@keras.saving.register_keras_serializable(package="keras_bert_core")
class XlmRobertaTokenizer(SentencePieceTokenizer):
    """XLM-RoBERTa's SentencePiece tokenizer (`sentencepiece.bpe.model`) with fairseq's ids,
    inside the TensorFlow graph.

    The text goes to the SentencePiece model as it is (no lower case, accents kept: the
    model's own normalizer, `nmt_nfkc` in XLM-R's, does the rest), and each piece gets
    fairseq's id, as Hugging Face's `XLMRobertaTokenizerFast` gives them: `<s>`=0,
    `<pad>`=1, `</s>`=2, `<unk>`=3, the model's pieces from its fourth on at their model
    id + 1, and `<mask>` last (250,001 in XLM-R's 250,002). Both pipelines of
    `SentencePieceTokenizer` (TF Serving, and TFLite with `tflite_compatible=True`), its
    offsets and `max_text_bytes` work the same. Special tokens are never produced from
    text (`"<mask>"` in a text is its characters).

    Hugging Face's Unigram orders the pieces of equally scored segmentations differently
    from the `sentencepiece` library (whose ids this layer gives): in a long run of one
    character, e.g. `"---------------"`, the two may split the run in another order.

    Args:
        model: path to XLM-R's `sentencepiece.bpe.model` (a SentencePiece model whose
            first pieces are `<unk>`, `<s>`, `</s>`, as `spm_train` makes by default) or
            its bytes.
        lower_case: must be False (XLM-R is cased); kept for configs.
        keep_accents: must be True (accents are the model's to read); kept for configs.
        tflite_compatible: tokenize with ops that convert to TFLite (see
            `SentencePieceTokenizer`).
        max_text_bytes: tokenize only this many first bytes of each text (see
            `SentencePieceTokenizer`).
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    >>> from sentencepiece import sentencepiece_model_pb2
    >>> proto = sentencepiece_model_pb2.ModelProto()
    >>> for piece, kind in [("<unk>", "UNKNOWN"), ("<s>", "CONTROL"), ("</s>", "CONTROL")]:
    ...     _ = proto.pieces.add(piece=piece, score=0.0, type=kind)
    >>> for piece, score in [("▁Der", -1.0), ("▁Fuchs", -2.0), ("▁", -3.0), ("s", -3.0),
    ...                      (".", -3.0), ("ü", -4.0)]:
    ...     _ = proto.pieces.add(piece=piece, score=score)
    >>> proto.normalizer_spec.name = "identity"
    >>> tokenizer = XlmRobertaTokenizer(proto.SerializeToString())
    >>> tokenizer(["Der Fuchs.", "Füchse"]).to_list()
    [[4, 5, 8], [6, 3, 9, 3, 7, 3]]
    >>> tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id, tokenizer.unk_id
    (0, 1, 2, 3)
    >>> tokenizer.mask_id, tokenizer.vocabulary_size(), tokenizer.id_to_token(5)
    (10, 11, '▁Fuchs')
    >>> tokenizer.detokenize([[0, 4, 5, 8, 2]]).numpy().tolist()
    [b'Der Fuchs.']
    """

    SPECIAL_TOKENS = {"cls": "<s>", "sep": "</s>", "pad": "<pad>", "mask": "<mask>",
                      "unk": "<unk>"}
    vocabulary_kind = FAIRSEQ_SENTENCEPIECE
    MODEL_FILE = "sentencepiece.bpe.model"

    def __init__(self, model, lower_case=False, keep_accents=True, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        if lower_case or not keep_accents:
            raise ValueError("XlmRobertaTokenizer reads text as it is: lower_case=False and "
                             "keep_accents=True (XLM-RoBERTa is cased; its model normalizes)")
        super().__init__(model, lower_case=False, keep_accents=True,
                         tflite_compatible=tflite_compatible, max_text_bytes=max_text_bytes,
                         **kwargs)

    def _text_preprocessing(self):
        return RawText()

    def _set_vocabulary(self, model):
        super()._set_vocabulary(model)
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(self.model)
        first = tuple(p.piece for p in proto.pieces[:len(_MODEL_SPECIALS)])
        if first != _MODEL_SPECIALS:
            raise ValueError(f"XLM-RoBERTa's SentencePiece model starts with the pieces "
                             f"{_MODEL_SPECIALS}; this one starts with {first}")
        # Model id -> fairseq id, and back (<pad> and <mask> as a control piece, which
        # detokenizes to nothing).
        size = len(self._pieces)
        to_fairseq = np.arange(1, size + 1, dtype=np.int32)
        to_fairseq[:3] = [3, 0, 2]
        to_model = np.concatenate([[1, 1, 2, 0], np.arange(3, size), [1]]).astype(np.int32)
        with tf.init_scope():
            self._to_fairseq = tf.constant(to_fairseq)
            self._to_model = tf.constant(to_model)
        # The Python-side lookups (`token_to_id`, `id_to_token`, `vocabulary_size`) read
        # fairseq's dictionary.
        self._pieces = [*_FAIRSEQ_SPECIALS, *self._pieces[len(_MODEL_SPECIALS):], "<mask>"]
        self._piece_ids = {token: i for i, token in enumerate(self._pieces)}

    def _tokenize(self, text, with_offsets):
        ids, *offsets = super()._tokenize(text, with_offsets)
        return (ids.with_flat_values(tf.gather(self._to_fairseq, ids.flat_values)), *offsets)

    def _model_ids(self, token_ids):
        return token_ids.with_flat_values(tf.gather(self._to_model, token_ids.flat_values))
