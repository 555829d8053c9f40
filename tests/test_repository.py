"""Checks on the repository itself: style, the CLI entry point, README and CI agreement."""

import io
import pathlib
import re
import shutil
import subprocess
import sys
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(pathlib.Path(sys.executable).parent / "ruff")
    if not pathlib.Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    result = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = ci.strip().splitlines()[-1]
    assert test_command in readme


def test_kbc_version_and_help_answer_without_error():
    for flag in ("--version", "--help"):
        result = subprocess.run([sys.executable, "-m", "keras_bert_core.cli", flag],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "kbc" in result.stdout or "keras_bert_core" in result.stdout


def test_subpackages_load_from_the_top_level_as_the_readme_calls_them():
    script = ("import keras_bert_core as kbc; "
              "print(kbc.training.distribution_strategy.__name__, kbc.text.BertTokenizer.__name__)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["distribution_strategy", "BertTokenizer"]


# A measured figure: "14%", "1.4x", "2.1 ms", "3 times as fast", "GFLOP/s".
_FIGURE = re.compile(r"\d(\.\d+)?\s?%(?![%s(d\]])|\d(\.\d+)?x\b|\d\s?(ms|µs)\b|\d times (as|faster)"
                     r"|GFLOP")


def test_product_comments_and_docstrings_hold_no_measured_figures():
    # Figures go stale with every run: they live in bench/RESULTS.md, and a comment names
    # the benchmark that shows them.
    found = []
    for path in sorted((ROOT / "keras_bert_core").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        prose = [(token.start[0], token.string)
                 for token in tokenize.generate_tokens(io.StringIO(source).readline)
                 if token.type == tokenize.COMMENT or (
                     token.type == tokenize.STRING and token.string.lstrip("rbuf").startswith(
                         ('"""', "'''")))]
        found += [f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}"
                  for line, text in prose for match in _FIGURE.finditer(text)]
    assert not found, "\n".join(found)
