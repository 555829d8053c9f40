"""`kbc finetune`'s long-text options: each misuse is one clear line, before any work."""

import pytest

from tests.cli.conftest import DATA, VOCAB, assert_one_line_error


@pytest.mark.parametrize("options, fragments", [
    (["--task", "classify", "--stride", "8"], ["--stride without --long-texts windows"]),
    (["--task", "pair", "--long-texts", "windows"],
     ["--long-texts windows is for --task classify or multilabel or ner, not pair"]),
    (["--task", "ner", "--long-texts", "windows", "--window-aggregation", "max"],
     ["--window-aggregation is for --task classify or multilabel, not ner"]),
    (["--task", "classify", "--long-texts", "windows", "--stride", "40"],
     ["--stride 40: must be between 1 and 30 (--seq-length 32"]),
    (["--task", "classify", "--long-texts", "windows", "--max-windows", "0"],
     ["--max-windows 0: must be at least 1"]),
])
def test_long_text_options_are_checked(kbc, tmp_path, options, fragments):
    result = kbc("finetune", *options, "--train", DATA / "sentiment.csv", "--vocab", VOCAB,
                 "--seq-length", 32, "--run-dir", tmp_path / "run")
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "run").exists()
