"""`load_checkpoint`: one entry point that recognizes the format of a BERT checkpoint."""

from __future__ import annotations

import os
import warnings

from keras_bert_core.checkpoints import (
    google_research,
    google_research_electra,
    huggingface,
    keras_file,
    keras_hub,
    model_garden,
    sentence_transformers,
)
from keras_bert_core.checkpoints.hub_names import resolve
from keras_bert_core.checkpoints.readers import TFCheckpointReader, tf_checkpoint_prefix
from keras_bert_core.errors import CheckpointError
from keras_bert_core.models.pretrainer import BertPretrainer

FORMATS = ("keras", "keras_hub", "huggingface", "sentence_transformers", "google_research",
           "google_research_electra", "model_garden")
_MODULES = {"keras_hub": keras_hub, "huggingface": huggingface,
            "google_research": google_research,
            "google_research_electra": google_research_electra, "model_garden": model_garden}
_HEAD_FORMATS = ("huggingface", "google_research", "google_research_electra")
_LOOKED_FOR = (
    "a .keras file or a preset folder (preset.json + model.keras); a keras-hub BertBackbone "
    "preset folder (config.json + model.weights.h5); "
    "a sentence-transformers folder (modules.json); "
    "a Hugging Face folder (config.json + model.safetensors) or .safetensors file; a "
    "TensorFlow checkpoint prefix, .index file or folder: google-research (bert_model.ckpt.* "
    "+ bert_config.json; ELECTRA's electra/ and generator/ scopes) or Model Garden TF2 "
    "(tf.train.Checkpoint)")


def detect_format(path):
    """Which of `FORMATS` the checkpoint at `path` is in.

    Raises:
        CheckpointError: saying what was looked for, when nothing matches.
    """
    path = keras_file.model_of_preset(os.fspath(path))
    if os.path.isfile(path) and keras_file.matches(path):
        return "keras"
    if keras_hub.matches(path):
        return "keras_hub"
    if huggingface.matches(path):
        return "huggingface"  # a sentence-transformers folder with its Transformer on top too
    if sentence_transformers.matches(path):
        return "sentence_transformers"
    prefix = tf_checkpoint_prefix(path)
    if prefix is None:
        missing = "" if os.path.exists(path) else f"; there is no file or folder at {path}"
        raise CheckpointError(f"{path}: no BERT checkpoint found; looked for {_LOOKED_FOR}"
                              f"{missing}")
    reader = TFCheckpointReader(prefix)
    if google_research.matches(reader):
        return "google_research"
    if google_research_electra.matches(reader):
        return "google_research_electra"
    if model_garden.matches(reader):
        return "model_garden"
    raise CheckpointError(
        f"{prefix}: a TensorFlow checkpoint, but neither google-research's (no bert/embeddings/ "
        f"variables) nor object-based (TF2); its variables include {sorted(reader.shapes)[:8]}")


def load_checkpoint(path, config=None):
    """Load a pretrained BERT from any supported format into a new `BertEncoder`.

    Formats (auto-detected, see `detect_format`): Hugging Face safetensors (a
    sentence-transformers folder gives its Transformer's encoder), google-research TF1
    checkpoints (BERT, ALBERT, and ELECTRA's, which give their discriminator), TF Model
    Garden TF2 checkpoints, keras-hub `BertBackbone` presets and `.keras` files (a
    `BertEncoder`, or a task model holding one), our preset folders included
    (`save_to_preset`; `from_preset` loads their vocabulary and head too). Weights are
    checked by name and shape before any is assigned; a mismatch raises one
    `CheckpointMismatchError` listing every missing, unexpected and mis-shaped weight.

    Args:
        path: a checkpoint folder, file, or TensorFlow checkpoint prefix; or a Hugging Face
            Hub name, `"hf://org/name"` (`"hf://org/name@revision"` pins a branch, tag or
            commit), downloaded into the Hub's cache or read from it (`HF_HUB_OFFLINE=1`)
            with the `hub` extra.
        config: a `BertConfig` to use instead of the one stored beside the weights (or, for
            Model Garden checkpoints without one, inferred from the shapes). Not accepted for
            `.keras` files, which carry their own.

    Returns:
        `(encoder, config)`.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> from keras_bert_core.checkpoints import load_checkpoint, save_google_research_checkpoint
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_google_research_checkpoint(encoder, folder)
    >>> loaded, config = load_checkpoint(folder)
    >>> config.hidden_size
    128
    """
    path = keras_file.model_of_preset(resolve(path))
    fmt = detect_format(path)
    if fmt == "keras":
        if config is not None:
            raise ValueError(f"{path}: a .keras file carries its own config; do not pass config=")
        return keras_file.load(path)
    if fmt == "sentence_transformers":
        return sentence_transformers.load_encoder(path, config)
    return _MODULES[fmt].load(path, config)


def read_pretraining_head_weights(path):
    """The masked-LM and next-sentence head weights of a pretraining checkpoint.

    Reads Hugging Face `BertForPreTraining` / `BertForMaskedLM` safetensors (and the other
    families' heads) and google-research checkpoints.

    Returns:
        `None` when the checkpoint holds no head, else a dict of float32 numpy arrays in
        Keras layout: `mlm/transform/kernel`, `mlm/transform/bias`, `mlm/layer_norm/gamma`,
        `mlm/layer_norm/beta`, `mlm/output_bias` (the MLM head, when present) and
        `nsp/kernel` `[hidden, 2]`, `nsp/bias` (the NSP head, when present); ELECTRA's
        discriminators give `rtd/dense/kernel`, `rtd/dense/bias`, `rtd/output/kernel`
        `[hidden, 1]`, `rtd/output/bias` (its replaced-token head) instead.
    """
    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt not in _HEAD_FORMATS:
        raise CheckpointError(f"{path}: reading pretraining heads from {fmt} checkpoints is "
                              f"not supported (only {' and '.join(_HEAD_FORMATS)})")
    return _MODULES[fmt].read_heads(path)


def load_pretrainer(path, config=None):
    """Load a checkpoint into a `BertPretrainer`: the encoder and, where present, its heads.

    Hugging Face and google-research checkpoints carry the masked-LM and next-sentence
    heads; a `.keras` file may hold a whole `BertPretrainer`. Heads a checkpoint lacks (all of
    them for encoder-only formats, the NSP head of a `BertForMaskedLM`) keep their fresh
    initialization, with a warning.

    Args:
        path: the checkpoint, as for `load_checkpoint`.
        config: as for `load_checkpoint`.

    Returns:
        `(pretrainer, config)`.
    """
    path = keras_file.model_of_preset(resolve(path))
    fmt = detect_format(path)
    if fmt == "keras" and config is None:
        pretrainer = keras_file.find_model(keras_file.load_model(path), BertPretrainer)
        if pretrainer is not None:
            return pretrainer, pretrainer.encoder.config
    encoder, config = load_checkpoint(path, config)
    heads = read_pretraining_head_weights(path) if fmt in _HEAD_FORMATS else None
    # RoBERTa and DistilBERT pretrain with masked LM alone.
    next_sentence = config.pooler and config.family in ("bert", "albert")
    pretrainer = BertPretrainer(encoder, next_sentence=next_sentence)
    missing = load_head_weights(pretrainer, heads or {})
    if missing:
        warnings.warn(f"{path}: no pretrained weights for {missing}; they keep their fresh "
                      "initialization", stacklevel=2)
    return pretrainer, config


def load_head_weights(pretrainer, weights):
    """Loads the heads `pretrainer` has from `weights` (named as `get_head_weights` names
    them), ignoring the weights of heads it lacks (the next-sentence head, for a
    masked-LM-only pretrainer).

    Returns:
        The sorted names it found no weights for; those keep their values.
    """
    names = pretrainer.get_head_weights().keys()
    pretrainer.set_head_weights({name: value for name, value in weights.items() if name in names},
                                strict=False)
    return sorted(names - weights.keys())


def convert_checkpoint(src, dst, config=None):
    """Load a checkpoint in any supported format and save its encoder as a `.keras` file.

    Args:
        src: the checkpoint, as for `load_checkpoint`.
        dst: the output path; must end in `.keras`.
        config: as for `load_checkpoint`.

    Returns:
        The loaded `BertEncoder`.
    """
    dst = os.fspath(dst)
    if not dst.endswith(".keras"):
        raise ValueError(f"{dst}: the output of convert_checkpoint must end in .keras")
    encoder, _ = load_checkpoint(src, config)
    encoder.save(dst)
    return encoder
