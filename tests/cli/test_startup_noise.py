"""A new user's terminal shows kbc's lines, not TensorFlow's C++ start-up log."""

import os
import re
import subprocess
import sys


def test_tensorflow_start_up_log_is_silenced_unless_asked_for(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\nthe dog sat on the log.\n" * 30)
    environment = {name: value for name, value in os.environ.items()
                   if name != "TF_CPP_MIN_LOG_LEVEL"}
    command = [sys.executable, "-m", "keras_bert_core.cli", "vocab", str(corpus),
               "--vocab-size", "60", "-o"]
    quiet = subprocess.run([*command, str(tmp_path / "a.txt")], capture_output=True,
                           text=True, env=environment, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    # TensorFlow's C++ log lines look like "2026-11-24 07:00:00.000000: I external/..."
    # (2.20) or, through absl, "I0000 00:00:1795636552.750137   19997 port.cc:153] ..." (2.21).
    assert ": I " not in quiet.stderr and ": E " not in quiet.stderr, quiet.stderr
    assert not re.search(r"^[IWE]\d{4} ", quiet.stderr, re.MULTILINE), quiet.stderr
    assert "absl::InitializeLog" not in quiet.stderr, quiet.stderr
    loud = subprocess.run([*command, str(tmp_path / "b.txt")], capture_output=True, text=True,
                          env={**environment, "TF_CPP_MIN_LOG_LEVEL": "0"}, timeout=300)
    assert loud.returncode == 0 and ": I " in loud.stderr


def test_parsing_any_command_line_loads_no_tensorflow():
    """`kbc` sets TensorFlow's log level after parsing: a subcommand module that imports
    TensorFlow at the top (directly or through a package `__init__`) logs its start-up
    and slows `kbc --help`."""
    check = ("import sys\n"
             "from keras_bert_core.cli import build_parser\n"
             "build_parser()\n"
             "loaded = sorted(m for m in ('tensorflow', 'keras') if m in sys.modules)\n"
             "assert not loaded, loaded\n")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
