"""Every script in examples/ runs end to end in its smoke mode, as `python SCRIPT --smoke`
runs it: as `__main__`, its folder first on the path, in a scratch working directory."""

import os
import pathlib
import runpy
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

# Script -> (extra arguments, what its output must show).
CASES = {
    "pretrain_from_text.py": (["--output", "{tmp}"], "saved"),
    "finetune_classifier.py": ([], "paraphrase accuracy"),
    "squad_qa.py": ([], "'exact_match'"),
    "ner_tagging.py": ([], "entity precision"),
    "multiple_choice.py": ([], "accuracy"),
    "multilabel_topics.py": ([], "SavedModel answers the same label sets"),
    "distributed_training.py": (["--run-dir", "{tmp}"], "MirroredStrategy: 2 replica(s)"),
    "export_and_serve.py": (["--output", "{tmp}"], "max |SavedModel - Keras|"),
    "tflite_inference.py": (["--output", "{tmp}/model.tflite"], "Keras says"),
    "semantic_search.py": ([], "top match 1: "),
    "long_documents.py": ([], "the SavedModel says"),
}
# Scripts that configure TensorFlow's devices before it starts: a new process each. The
# others run in the test's process (a new one would only add TensorFlow's start-up).
NEW_PROCESS = {"distributed_training.py"}


def test_every_example_has_a_smoke_test():
    # Every example script is run (modules named _*.py are their shared helpers).
    scripts = [p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")]
    assert sorted(scripts) == sorted(CASES)


def run_in_a_new_process(argv, tmp_path):
    result = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout


def run_here(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setattr(sys, "argv", argv)
    capsys.readouterr()
    runpy.run_path(argv[0], run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.slow  # trains or exports a small model
@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script, tmp_path, monkeypatch, capsys):
    arguments, expected = CASES[script]
    argv = [str(EXAMPLES / script), "--smoke", *(a.format(tmp=tmp_path) for a in arguments)]
    output = (run_in_a_new_process(argv, tmp_path) if script in NEW_PROCESS
              else run_here(argv, tmp_path, monkeypatch, capsys))
    assert expected in output


def test_pretrained_weights_fine_tune_at_a_small_rate(monkeypatch):
    """With `--checkpoint` (as their docstrings show) the scripts trained a pretrained encoder
    at the random tiny encoder's 1e-3: a pretrained MiniLM stayed at chance on
    finetune_classifier.py's pairs (0.52, the pair answered wrong; 1.00 at 1e-4)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import _setup

    assert _setup.learning_rate(None) == 1e-3 and _setup.learning_rate("minilm/") == 1e-4
    takes_checkpoint = [p for p in EXAMPLES.glob("*.py") if '"--checkpoint"' in p.read_text()]
    assert len(takes_checkpoint) >= 6
    for script in takes_checkpoint:
        assert "learning_rate(args.checkpoint)" in script.read_text(), script.name
