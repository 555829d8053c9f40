"""Optional dependencies: imported where a feature uses them, never at import time.

The core install (`pip install -e .`) builds, trains and exports models. What only some
features use comes with a pip extra (pyproject.toml's `[project.optional-dependencies]`):

    cli        matplotlib, tqdm, tensorboard, and the litert and vocab extras: what `kbc`
               uses (curves.png, progress bars, TensorBoard logs, .tflite checks)
    litert     ai-edge-litert: running .tflite files (the LiteRT interpreter)
    vocab      tokenizers: learning byte-level BPE vocabularies (the tokenizer itself runs
               in the TensorFlow graph; sentencepiece, which learns SentencePiece models,
               is a core dependency: SentencePieceTokenizer reads its model with it)
    tfds       tensorflow-datasets: TFDS tasks (`load_tfds_task`, `kbc finetune --tfds`)
    keras-hub  keras-hub: reading KerasHub presets
    serving    tensorflow-serving-api: warmup requests in SavedModel exports
    hub        huggingface_hub: checkpoints by Hub name (`hf://org/name`)
    all        every extra above

`require` imports one and, when it is missing, raises `MissingDependencyError` with one line
naming the feature, the package and the extra (installed from the source folder: the package
is not on PyPI).
"""

import importlib

from keras_bert_core.errors import MissingDependencyError

# Top-level module -> (its package on PyPI, the extra that installs it).
OPTIONAL_MODULES = {
    "matplotlib": ("matplotlib", "cli"),
    "tqdm": ("tqdm", "cli"),
    "tensorboard": ("tensorboard", "cli"),
    "ai_edge_litert": ("ai-edge-litert", "litert"),
    "tokenizers": ("tokenizers", "vocab"),
    "tensorflow_datasets": ("tensorflow-datasets", "tfds"),
    "keras_hub": ("keras-hub", "keras-hub"),
    "tensorflow_serving": ("tensorflow-serving-api", "serving"),
    "huggingface_hub": ("huggingface_hub", "hub"),
}


def require(module, feature):
    """Imports `module` (a module of an optional package, e.g. `"matplotlib.figure"`).

    Args:
        module: the module's full name; its top-level package must be in `OPTIONAL_MODULES`.
        feature: what needs it, as the error's subject (e.g. `"curves.png"`).

    Returns:
        The module.

    Raises:
        MissingDependencyError: the package is not installed. A package that is installed
            but fails to import (e.g. one of its own dependencies is missing) raises its
            own error.

    Example:
    >>> require("tqdm.auto", "progress bars").__name__
    'tqdm.auto'
    >>> import sys
    >>> from unittest import mock
    >>> with mock.patch.dict(sys.modules, {"tqdm": None, "tqdm.auto": None}):  # not installed
    ...     try:
    ...         require("tqdm.auto", "progress bars")
    ...     except MissingDependencyError as error:
    ...         print(error)
    progress bars: tqdm is not installed; pip install -e ".[cli]" in the keras_bert_core \
source folder (or pip install tqdm)
    """
    top = module.split(".")[0]
    package, extra = OPTIONAL_MODULES[top]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and error.name.split(".")[0] != top:
            raise  # the package is there; something it imports is not
        raise MissingDependencyError(
            f"{feature}: {package} is not installed; pip install -e \".[{extra}]\" in the "
            f"keras_bert_core source folder (or pip install {package})") from error
