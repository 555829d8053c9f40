"""DistilBERT: BERT's width at half its depth, no segments, no pooler."""

from keras_bert_core.families.sizes import bert_size

MODEL_TYPES = ("distilbert",)

_DISTILBERT = {"family": "distilbert", "type_vocab_size": 0, "pooler": False,
               "classifier_activation": "relu"}

PRESETS = {"distilbert_base": {**bert_size(6, 768), **_DISTILBERT}}

# Its own key names -> ours.
ALIASES = {"n_layers": "num_layers", "n_heads": "num_heads", "dim": "hidden_size",
           "hidden_dim": "intermediate_size", "activation": "hidden_act"}


def huggingface_settings(values):
    # Its sinusoidal variant stores the table too: it loads as a learned one.
    return dict(_DISTILBERT)
