"""RoBERTa: BERT with byte-level BPE, positions counted from the padding id + 1, one
segment and a tanh classifier head on the first token."""

from keras_bert_core.families.sizes import bert_size

MODEL_TYPES = ("roberta",)

ROBERTA = {"family": "roberta", "vocab_size": 50265, "max_position_embeddings": 514,
           "type_vocab_size": 1, "layer_norm_eps": 1e-5, "position_offset": 2,
           "classifier_activation": "tanh"}

PRESETS = {
    "roberta_base": {**bert_size(12, 768), **ROBERTA},
    "roberta_large": {**bert_size(24, 1024), **ROBERTA},
}


def huggingface_settings(values):
    # Positions count from the padding id + 1 (fairseq's convention).
    return {"family": "roberta", "classifier_activation": "tanh",
            "position_offset": values.get("pad_token_id", 1) + 1}
