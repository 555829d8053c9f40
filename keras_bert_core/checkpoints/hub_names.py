"""Checkpoints by Hugging Face Hub name: `hf://org/name[@revision]` -> a local folder.

`huggingface_hub` (the `hub` extra) downloads the snapshot into its own cache (`HF_HOME`,
`HF_HUB_CACHE`), or finds it there: with `HF_HUB_OFFLINE=1` nothing goes out and the cache
answers. Only the files the package reads come down (configs, safetensors, tokenizer and
vocabulary files, sentence-transformers modules, keras-hub and kbc presets); never pickled
`*.bin` weights, nor other frameworks' copies.
"""

from __future__ import annotations

import os

from keras_bert_core.errors import CheckpointError
from keras_bert_core.extras import require

PREFIX = "hf://"

# What the loaders read; `*` spans folders, so sentence-transformers modules
# (1_Pooling/config.json, 2_Dense/model.safetensors) and keras-hub assets come too.
ALLOW_PATTERNS = [
    "*.json",          # config.json, tokenizer files, modules.json, preset.json, metadata.json
    "*.safetensors",
    "*.txt",           # vocab.txt, merges.txt, keras-hub's vocabulary.txt
    "*.model",         # SentencePiece: spiece.model, sentencepiece.bpe.model, spm.model
    "*.keras",
    "*.weights.h5",    # keras-hub presets
]


def is_hub_name(path):
    """Whether `path` names a Hub repository (`hf://org/name`, optionally `@revision`).

    Example:
    >>> is_hub_name("hf://google-bert/bert-base-uncased"), is_hub_name("runs/sentiment")
    (True, False)
    """
    return isinstance(path, str) and path.startswith(PREFIX)


def parse_hub_name(path):
    """`(repo_id, revision)` of `hf://org/name[@revision]` (revision `None`: the default
    branch).

    Example:
    >>> parse_hub_name("hf://FacebookAI/roberta-base@e2da8e2")
    ('FacebookAI/roberta-base', 'e2da8e2')
    """
    name = path[len(PREFIX):]
    repo_id, at, revision = name.partition("@")
    if not repo_id or (at and not revision):
        raise CheckpointError(f"{path}: not a Hub name; write hf://ORG/NAME or "
                              "hf://ORG/NAME@REVISION")
    return repo_id, revision or None


def resolve(path):
    """The local folder of `path`: a Hub name's snapshot (downloaded or cached), else `path`
    as it is (a string).

    Raises:
        MissingDependencyError: `huggingface_hub` is not installed (the `hub` extra).
        CheckpointError: an unknown name or revision, a name not in the cache when offline,
            or no network; one line each.

    Example:
    >>> resolve("runs/sentiment")
    'runs/sentiment'
    """
    if not is_hub_name(path):
        return os.fspath(path)
    repo_id, revision = parse_hub_name(path)
    hub = require("huggingface_hub", f"{path} (a Hub name)")
    utils = require("huggingface_hub.utils", f"{path} (a Hub name)")
    try:
        return hub.snapshot_download(repo_id, revision=revision, allow_patterns=ALLOW_PATTERNS)
    except utils.RevisionNotFoundError:
        raise CheckpointError(f"{path}: the Hugging Face Hub has no revision {revision!r} of "
                              f"{repo_id}") from None
    except utils.RepositoryNotFoundError:
        raise CheckpointError(f"{path}: no such model on the Hugging Face Hub (or it is "
                              "private or gated: set HF_TOKEN)") from None
    except utils.HFValidationError as error:
        raise CheckpointError(f"{path}: not a Hub name: {_first_line(error)}") from None
    except utils.LocalEntryNotFoundError as error:
        constants = require("huggingface_hub.constants", f"{path} (a Hub name)")
        raise CheckpointError(_not_cached(path, constants, error)) from None
    except utils.HfHubHTTPError as error:
        raise CheckpointError(f"{path}: the Hugging Face Hub answered: "
                              f"{_first_line(error)}") from None
    except (OSError, ConnectionError) as error:  # the network, during the download
        raise CheckpointError(f"{path}: downloading failed: {_first_line(error)}") from None


def _not_cached(path, constants, error):
    """The message for a name the cache lacks when the Hub cannot be asked."""
    cache = constants.HF_HUB_CACHE
    if constants.HF_HUB_OFFLINE:
        return (f"{path}: not in the Hugging Face cache {cache}, and HF_HUB_OFFLINE is set; "
                "download it once online")
    cause = error.__cause__ or error
    return (f"{path}: the Hugging Face Hub cannot be reached ({_first_line(cause)}), and the "
            f"cache {cache} does not hold it")


def _first_line(error):
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]

