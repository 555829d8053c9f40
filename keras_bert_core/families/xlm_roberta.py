"""XLM-RoBERTa: RoBERTa's architecture with a multilingual SentencePiece vocabulary of
250,002 ids (fairseq's), for any language."""

from keras_bert_core.families import roberta
from keras_bert_core.families.sizes import bert_size

MODEL_TYPES = ("xlm-roberta",)

_XLM_ROBERTA = {**roberta.ROBERTA, "family": "xlm-roberta", "vocab_size": 250002}

PRESETS = {
    "xlm_roberta_base": {**bert_size(12, 768), **_XLM_ROBERTA},
    "xlm_roberta_large": {**bert_size(24, 1024), **_XLM_ROBERTA},
}


def huggingface_settings(values):
    return {**roberta.huggingface_settings(values), "family": "xlm-roberta"}
