"""A `BertEmbedder` written as a sentence-transformers folder, which
`sentence_transformers.SentenceTransformer(folder)` loads (and `from_preset` reads back)."""

from __future__ import annotations

import json
import os

import numpy as np

from keras_bert_core.checkpoints.huggingface_writer import save_huggingface_checkpoint
from keras_bert_core.checkpoints.sentence_transformers import (
    ACTIVATIONS,
    MODEL_CONFIG,
    MODULE_CONFIG,
    MODULES_FILE,
    POOLING_FLAGS,
    POOLING_NAMES,
    WEIGHTS_FILE,
)

_MODULE_TYPE = "sentence_transformers.models.{}"


def _write_json(file, values):
    with open(file, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2)
        f.write("\n")


def _pooling_config(embedder):
    """1_Pooling/config.json: the legacy flags (which every sentence-transformers version
    reads) where they say the modes in their order, else the `pooling_mode` list."""
    ours = {value: key for key, value in POOLING_NAMES.items()}
    modes = [ours[mode] for mode in embedder.pooler.modes]
    flags = list(POOLING_FLAGS.values())
    config = {"word_embedding_dimension": embedder.encoder.config.hidden_size}
    if modes == sorted(modes, key=flags.index):
        config.update({flag: mode in modes for flag, mode in POOLING_FLAGS.items()})
    else:
        config["pooling_mode"] = modes
    config["include_prompt"] = True
    return config


def save_sentence_transformers(embedder, preprocessor, folder, *, overwrite=False):
    """Writes `embedder` as a sentence-transformers folder.

    The layout: the encoder as a Hugging Face base model (`config.json`,
    `model.safetensors`) with the tokenizer's files and `sentence_bert_config.json`
    (`max_seq_length`) at the top, `modules.json`, `1_Pooling/config.json`, a `k_Dense`
    folder per dense layer (`config.json`, `model.safetensors`), `Normalize` when the
    embedder normalizes, and `config_sentence_transformers.json` (prompts,
    `default_prompt_name`, `similarity_fn_name`). The folder appears only once complete.

    Args:
        embedder: a `BertEmbedder`.
        preprocessor: its `BertPreprocessor`; None: the embedder's own.
        folder: the folder to write; it must not exist, or be empty, unless `overwrite`.
        overwrite: replace an existing folder.

    Returns:
        `folder`.

    Raises:
        FileExistsError: `folder` holds files and `overwrite` is False.
        ValueError: there is no preprocessor.
        CheckpointError: the encoder has no Hugging Face counterpart.

    Example:
    >>> import tempfile
    >>> import keras_bert_core as kbc
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "car"]
    >>> embedder = kbc.BertEmbedder(
    ...     kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab))),
    ...     preprocessor=kbc.BertPreprocessor(vocab, seq_length=16))
    >>> folder = kbc.save_sentence_transformers(embedder, None, tempfile.mkdtemp() + "/st")
    >>> loaded, _ = kbc.from_preset(folder)
    >>> type(loaded).__name__, loaded.predict(["a red car"], verbose=0).shape
    ('BertEmbedder', (1, 128))
    """
    from safetensors.numpy import save_file

    from keras_bert_core.files import replaced_when_complete
    from keras_bert_core.text.vocabulary.files import TOKENIZER_CONFIG, write_vocabulary_files

    if not hasattr(embedder, "pooler") or not hasattr(embedder, "denses"):
        raise TypeError(f"save_sentence_transformers writes a BertEmbedder, not a "
                        f"{type(embedder).__name__}")
    preprocessor = preprocessor if preprocessor is not None else embedder.preprocessor
    if preprocessor is None:
        raise ValueError("save_sentence_transformers needs the embedder's preprocessor: "
                         "pass one (the embedder carries none)")
    folder = os.fspath(folder)
    if os.path.lexists(folder) and not overwrite and (
            not os.path.isdir(folder) or os.listdir(folder)):
        raise FileExistsError(f"{folder} already exists and is not empty; pass "
                              "overwrite=True to replace it")
    with replaced_when_complete(folder) as partial:
        os.makedirs(partial)
        save_huggingface_checkpoint(embedder.encoder, partial, preprocessor.packer)
        files = write_vocabulary_files(preprocessor.tokenizer, partial)
        with open(files[TOKENIZER_CONFIG], encoding="utf-8") as f:
            tokenizer_config = json.load(f)
        tokenizer_config["model_max_length"] = preprocessor.seq_length
        _write_json(files[TOKENIZER_CONFIG], tokenizer_config)
        # The tokenizer's own casing applies; sentence-transformers lower-cases nothing more.
        _write_json(os.path.join(partial, MODULE_CONFIG),
                    {"max_seq_length": preprocessor.seq_length, "do_lower_case": False})
        modules = [("Transformer", ""), ("Pooling", "1_Pooling")]
        os.makedirs(os.path.join(partial, "1_Pooling"))
        _write_json(os.path.join(partial, "1_Pooling", "config.json"), _pooling_config(embedder))
        torch_names = {value: key for key, value in ACTIVATIONS.items()}
        for settings, dense in zip(embedder.dense_layers, embedder.denses, strict=True):
            path = f"{len(modules)}_Dense"
            modules.append(("Dense", path))
            os.makedirs(os.path.join(partial, path))
            _write_json(os.path.join(partial, path, "config.json"), {
                "in_features": int(dense.kernel.shape[0]), "out_features": settings["units"],
                "bias": settings["use_bias"],
                "activation_function": torch_names[settings["activation"]]})
            weights = {"linear.weight": np.ascontiguousarray(dense.kernel.numpy().T)}
            if settings["use_bias"]:
                weights["linear.bias"] = np.asarray(dense.bias.numpy())
            save_file(weights, os.path.join(partial, path, WEIGHTS_FILE),
                      metadata={"format": "pt"})
        if embedder.normalize:
            modules.append(("Normalize", f"{len(modules)}_Normalize"))
        _write_json(os.path.join(partial, MODULES_FILE), [
            {"idx": index, "name": str(index), "path": path,
             "type": _MODULE_TYPE.format(kind)}
            for index, (kind, path) in enumerate(modules)])
        _write_json(os.path.join(partial, MODEL_CONFIG), {
            "prompts": embedder.prompts, "default_prompt_name": embedder.default_prompt_name,
            "similarity_fn_name": embedder.similarity_name})
    return folder
