"""Every script in examples/ runs end to end in its smoke mode, in a fresh process."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

# Script -> (extra arguments, what its output must show). Each takes 15-30 s on 2 cores.
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


def test_every_example_has_a_smoke_test():
    # Every example script is run (modules named _*.py are their shared helpers).
    scripts = [p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")]
    assert sorted(scripts) == sorted(CASES)


@pytest.mark.slow  # a new process that trains or exports a small model
@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script, tmp_path):
    arguments, expected = CASES[script]
    command = [sys.executable, str(EXAMPLES / script), "--smoke",
               *(a.format(tmp=tmp_path) for a in arguments)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path,
                            timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert expected in result.stdout
