"""BERT: the configuration every other family changes."""

from keras_bert_core.families.sizes import bert_size

MODEL_TYPES = ("bert",)

PRESETS = {
    "tiny": bert_size(2, 128),
    "mini": bert_size(4, 256),
    "small": bert_size(4, 512),
    "medium": bert_size(8, 512),
    "base": bert_size(12, 768),
    "large": bert_size(24, 1024),
}


def huggingface_settings(values):
    """BERT's `config.json` spells its fields in BERT's own names: nothing to add."""
    return {}
