"""DeBERTa-v2/v3's SentencePiece tokenizer: `SentencePieceTokenizer` with DeBERTa's file,
special tokens and text handling."""

import keras
from sentencepiece import sentencepiece_model_pb2

from keras_bert_core.text.sentencepiece.sentencepiece_tokenizer import SentencePieceTokenizer


@keras.saving.register_keras_serializable(package="keras_bert_core")
class DebertaTokenizer(SentencePieceTokenizer):
    """DeBERTa-v3's tokenizer (`spm.model`), inside the TensorFlow graph: the ids of Hugging
    Face's `DebertaV2TokenizerFast` (transformers 5).

    What differs from ALBERT's `SentencePieceTokenizer`, whose pipelines, offsets and TFLite
    route it shares:

    - BERT's special tokens, `[PAD]` `[CLS]` `[SEP]` `[UNK]` in the model, and `[MASK]`
      added after its pieces (id 128,000 in DeBERTa-v3's);
    - the text as `DebertaV2TokenizerFast` reads it: whitespace runs collapsed to one
      space, cased (unless `lower_case`), accents kept, quotes left alone, and the model's
      own normalizer (NFKC in DeBERTa-v3's) not applied: transformers 5 replaces it with
      NFC, which text in composed form already is. So a compatibility character (`ｆ`,
      `ﬁ`) reads as itself, an unknown piece, as in Hugging Face's tokenizer.

    Where `DebertaV2TokenizerFast` still differs: it makes special tokens of `"[MASK]"`
    and the like written in a text (this layer never makes them from text); a single
    no-break or other non-ASCII space it keeps as a character, where this layer reads
    Python's whitespace as a space; and NFC composes decomposed accents.

    Args:
        model: path to DeBERTa's `spm.model` or its bytes (see `SentencePieceTokenizer`).
        lower_case: lower-case the text (DeBERTa-v3's `do_lower_case` is False).
        keep_accents: keep accents (True, as `DebertaV2TokenizerFast`).
        tflite_compatible, max_text_bytes: as `SentencePieceTokenizer`.

    Example:
    >>> from sentencepiece import sentencepiece_model_pb2
    >>> proto = sentencepiece_model_pb2.ModelProto()
    >>> for piece in ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]:
    ...     _ = proto.pieces.add(piece=piece, score=0.0,
    ...                          type="UNKNOWN" if piece == "[UNK]" else "CONTROL")
    >>> for piece, score in [("▁The", -1.0), ("▁fox", -2.0), ("▁", -3.0), ("'", -3.0),
    ...                      ("s", -3.0)]:
    ...     _ = proto.pieces.add(piece=piece, score=score)
    >>> proto.trainer_spec.unk_id, proto.trainer_spec.pad_id = 3, 0
    >>> proto.trainer_spec.bos_id, proto.trainer_spec.eos_id = 1, 2
    >>> tokenizer = DebertaTokenizer(proto.SerializeToString())
    >>> tokenizer(["The  fox''s"]).to_list()
    [[4, 5, 7, 7, 8]]
    >>> tokenizer.mask_id, tokenizer.vocabulary_size()
    (9, 10)
    """

    SPECIAL_TOKENS = {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "mask": "[MASK]",
                      "unk": "[UNK]"}
    MODEL_FILE = "spm.model"
    ADDED_TOKENS = ("[MASK]",)
    REPLACES_QUOTES = False

    def __init__(self, model, lower_case=False, keep_accents=True, tflite_compatible=False,
                 max_text_bytes=None, **kwargs):
        super().__init__(model, lower_case=lower_case, keep_accents=keep_accents,
                         tflite_compatible=tflite_compatible, max_text_bytes=max_text_bytes,
                         **kwargs)

    def _model_to_tokenize(self, model):
        """The model with its normalizer's character map dropped (see the class docstring);
        whitespace stays as the model treats it."""
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(model)
        if not proto.normalizer_spec.precompiled_charsmap:
            return model
        proto.normalizer_spec.name = "identity"
        proto.normalizer_spec.precompiled_charsmap = b""
        return proto.SerializeToString()
