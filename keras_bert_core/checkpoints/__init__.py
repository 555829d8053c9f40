"""Load pretrained BERT weights: Hugging Face safetensors (and sentence-transformers
folders, read and written), google-research TF1 checkpoints,
TF Model Garden TF2 checkpoints, keras-hub presets and `.keras` files (our preset folders'
model.keras among them: `keras_bert_core.presets` reads the rest). Never unpickles."""

from keras_bert_core.checkpoints.google_research import save_google_research_checkpoint
from keras_bert_core.checkpoints.huggingface_writer import save_huggingface_checkpoint
from keras_bert_core.checkpoints.loader import (
    FORMATS,
    convert_checkpoint,
    detect_format,
    load_checkpoint,
    load_head_weights,
    load_pretrainer,
    read_pretraining_head_weights,
)
from keras_bert_core.checkpoints.sentence_transformers_writer import save_sentence_transformers
from keras_bert_core.checkpoints.weights import encoder_variables
from keras_bert_core.errors import CheckpointError, CheckpointMismatchError

__all__ = [
    "FORMATS",
    "CheckpointError",
    "CheckpointMismatchError",
    "convert_checkpoint",
    "detect_format",
    "encoder_variables",
    "load_checkpoint",
    "load_head_weights",
    "load_pretrainer",
    "read_pretraining_head_weights",
    "save_google_research_checkpoint",
    "save_huggingface_checkpoint",
    "save_sentence_transformers",
]
