"""Constants and helpers of the task tests (fixtures are in conftest.py)."""

import pathlib

# The task data files; the CLI tests and the examples read them too.
DATA = str(pathlib.Path(__file__).resolve().parents[1] / "text" / "data" / "tasks")
VOCAB = str(pathlib.Path(DATA) / "vocab.txt")


def write(tmp_path, name, text):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)
