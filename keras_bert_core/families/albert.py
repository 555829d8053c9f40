"""ALBERT (v2): factorized embeddings and blocks that share their weights."""

from keras_bert_core.families.sizes import bert_size

MODEL_TYPES = ("albert",)

# No dropout, tanh-approximate GELU, 128-wide embeddings, one shared layer.
_ALBERT = {"family": "albert", "vocab_size": 30000, "embedding_size": 128,
           "num_layer_groups": 1, "hidden_act": "gelu_approximate", "dropout": 0.0,
           "attention_dropout": 0.0}

PRESETS = {
    "albert_base": {**bert_size(12, 768), **_ALBERT},
    "albert_large": {**bert_size(24, 1024), **_ALBERT},
    "albert_xlarge": {**bert_size(24, 2048), **_ALBERT, "num_heads": 16},
    "albert_xxlarge": {**bert_size(12, 4096), **_ALBERT},
}


def huggingface_settings(values):
    return {"family": "albert", "num_layer_groups": values.get("num_hidden_groups", 1)}
