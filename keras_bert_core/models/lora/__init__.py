"""Low-rank adapters (LoRA) on the encoder's projections: enable, save alone, load, merge.

LoRA (Hu et al., 2021) freezes a pretrained kernel `W` and learns `W + (alpha / rank) * A B`
with `A` `[in, rank]` and `B` `[rank, out]`: a fine-tune trains and stores a small fraction of
the weights. The encoder's projections are `keras.layers.Dense` subclasses, so this module
uses Keras's own `Dense.enable_lora` (A from `he_uniform`, B zeros: a new adapter changes
nothing; A and B float32 under mixed precision too).

What trains after `enable_lora`, as in common LoRA fine-tuning (PEFT's defaults): the
adapters and, in a task model, the task head (every weight outside the encoder, new and
randomly initialized); every encoder weight (kernels, biases, LayerNorms, embeddings,
pooler) is frozen unless `also_train` names it. What `save_lora_weights` stores is exactly
what trains; the frozen weights come from the checkpoint the adapters were trained on.

For export, `merge_lora` returns a plain model of the same class and config whose kernels
hold `W + (alpha / rank) * A B`: `export_saved_model` and `export_tflite` take it as any
other model, and its graph has no adapter ops (`export_saved_model` also takes the LoRA
model itself, which serves the same outputs and computes `W + A B` in the graph). A `.keras`
file of a LoRA model holds such a merged model too: Keras writes the merged kernel and no
adapters, so the loaded model has none; keep the adapters with `save_lora_weights`.

`save_weights` files lose the adapters the same way, and `load_weights` then zeros A and B,
where neither gets a gradient again: a backup to resume training from also needs
`add_lora_state` / `restore_lora_state` (`training.StepBackup` calls them).
"""

from keras_bert_core.models.lora.adapter_files import load_lora_weights, save_lora_weights
from keras_bert_core.models.lora.enable import enable_lora
from keras_bert_core.models.lora.merge import merge_lora
from keras_bert_core.models.lora.projections import (
    ALSO_TRAIN,
    PROJECTIONS,
    TARGET_GROUPS,
    has_lora,
)
from keras_bert_core.models.lora.summary import LoraSummary, lora_summary
from keras_bert_core.models.lora.training_state import add_lora_state, restore_lora_state

__all__ = ["ALSO_TRAIN", "PROJECTIONS", "TARGET_GROUPS", "LoraSummary", "add_lora_state",
           "enable_lora", "has_lora", "load_lora_weights", "lora_summary", "merge_lora",
           "restore_lora_state", "save_lora_weights"]
