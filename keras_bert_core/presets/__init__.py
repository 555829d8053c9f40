"""Presets: one folder with everything a model needs to answer raw text (`save_to_preset`),
and `from_preset`, which also loads every checkpoint format and every `kbc` run directory."""

from keras_bert_core.presets.folder import FORMAT, FORMAT_VERSION, is_preset, read_preset
from keras_bert_core.presets.loading import from_preset
from keras_bert_core.presets.model_card import model_card
from keras_bert_core.presets.runs import trained_seq_length, training_record
from keras_bert_core.presets.saving import save_to_preset

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "from_preset",
    "is_preset",
    "model_card",
    "read_preset",
    "save_to_preset",
    "trained_seq_length",
    "training_record",
]
