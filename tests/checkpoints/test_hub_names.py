"""Checkpoints by Hugging Face Hub name (`hf://org/name`), read from an offline cache that
the tests write in huggingface_hub's own layout: no network reaches the tests."""

import os
import subprocess
import sys

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints import CheckpointError, load_checkpoint
from keras_bert_core.checkpoints.hub_names import resolve
from keras_bert_core.errors import MissingDependencyError
from tests.helpers import HUB_COMMIT, offline_hub_cache

DISTILBERT = os.path.join(os.path.dirname(__file__), "data", "families", "distilbert")


@pytest.fixture
def snapshot(tmp_path, monkeypatch):
    return offline_hub_cache(monkeypatch, tmp_path / "hub", "org/tiny-distilbert", DISTILBERT)


def test_a_hub_name_loads_as_its_folder(snapshot):
    expected, _ = load_checkpoint(DISTILBERT)
    encoder, config = load_checkpoint("hf://org/tiny-distilbert")
    model, preprocessor = kbc.from_preset(f"hf://org/tiny-distilbert@{HUB_COMMIT}")
    assert config.family == "distilbert"
    for weights in (encoder.get_weights(), model.get_weights()):
        assert len(weights) == len(expected.get_weights())
        for actual, wanted in zip(weights, expected.get_weights(), strict=True):
            np.testing.assert_array_equal(actual, wanted)
    assert preprocessor.tokenizer.vocabulary_size() == config.vocab_size


@pytest.mark.parametrize("name, fragment", [
    ("hf://org/unknown", "not in the Hugging Face cache"),
    ("hf://org/tiny-distilbert@v2", "not in the Hugging Face cache"),
    ("hf://org/tiny-distilbert@", "not a Hub name"),
    ("hf://org/bad name!", "not a Hub name"),
])
def test_a_name_the_offline_cache_lacks_is_one_line(snapshot, name, fragment):
    with pytest.raises(CheckpointError) as error:
        resolve(name)
    assert fragment in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(name)


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(MissingDependencyError, match=r'pip install -e "\.\[hub\]"'):
        kbc.from_preset("hf://org/tiny-distilbert")


def test_the_environment_alone_points_at_the_cache(snapshot):
    """A new process reads HF_HUB_CACHE and HF_HUB_OFFLINE as huggingface_hub does (without
    TensorFlow: hub_names.py alone)."""
    script = ("import importlib.util, sys; "
              "spec = importlib.util.spec_from_file_location('hub_names', sys.argv[1]); "
              "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
              "print(module.resolve('hf://org/tiny-distilbert'))")
    path = os.path.join(os.path.dirname(kbc.__file__), "checkpoints", "hub_names.py")
    out = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True,
                         check=True, env=os.environ).stdout
    assert out.strip() == str(snapshot)
