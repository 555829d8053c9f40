"""`kbc` takes a Hugging Face Hub name wherever it takes a checkpoint (the library's own
tests: tests/checkpoints/test_hub_names.py)."""

import os

from tests.cli.conftest import assert_one_line_error
from tests.helpers import offline_hub_cache

DISTILBERT = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                          "families", "distilbert")


def test_kbc_reads_hub_names_from_the_cache(kbc, tmp_path, monkeypatch):
    offline_hub_cache(monkeypatch, tmp_path / "hub", "org/tiny-distilbert", DISTILBERT)
    result = kbc("convert", "hf://org/tiny-distilbert", tmp_path / "out.keras", "-q")
    assert result.code == 0, result.err
    assert (tmp_path / "out.keras").is_file()
    result = kbc("finetune", "--task", "classify", "--train", tmp_path / "train.csv",
                 "--checkpoint", "hf://org/missing", "--run-dir", tmp_path / "run")
    assert_one_line_error(result, "hf://org/missing: not in the Hugging Face cache",
                          "HF_HUB_OFFLINE")
