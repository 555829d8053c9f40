"""A resume resumes the run it was: options it cannot honour and a training file changed
since the run started are refused in one line (`--allow-changed-data` lets the data pass), and
every hint to resume names the command that does. All on copies of the session's classifier
run, in this process."""

import json
import shutil

import pytest

from tests.cli.conftest import DATA, assert_one_line_error


@pytest.fixture
def run_copy(classify_run, tmp_path):
    """A copy of the classifier run whose training file is a copy too, which a test may
    change."""
    run_dir = tmp_path / "run"
    shutil.copytree(classify_run, run_dir)
    train = tmp_path / "train.csv"
    shutil.copyfile(DATA / "sentiment.csv", train)
    config = json.loads((run_dir / "config.json").read_text())
    assert [r["file"] for r in config["training_data"]] == [str(DATA / "sentiment.csv")]
    config["arguments"]["train"] = config["training_data"][0]["file"] = str(train)
    (run_dir / "config.json").write_text(json.dumps(config))
    return run_dir, train


def test_options_resume_cannot_honour_are_refused_by_name(kbc, run_copy):
    run_dir, _ = run_copy
    assert_one_line_error(
        kbc("finetune", "--resume", "--run-dir", run_dir, "--epochs", 3, "--lora", 8,
            "--backup-every", 5),
        f"--resume continues {run_dir} with the options it started with and cannot honour "
        "--epochs 3 (the run has 2), --lora 8 (the run has none); leave them out (only "
        "--backup-every may change)")
    assert_one_line_error(kbc("finetune", "--resume", "--run-dir", run_dir, "--overwrite"),
                          "cannot honour --overwrite (the run has off)")
    assert_one_line_error(kbc("finetune", "--task", "classify", "--allow-changed-data"),
                          "--allow-changed-data goes with --resume")


def test_a_changed_training_file_is_refused_on_resume_unless_allowed(kbc, run_copy):
    run_dir, train = run_copy
    size = train.stat().st_size
    train.write_text("".join(train.read_text().splitlines(keepends=True)[:-1]))  # a row cut
    assert_one_line_error(kbc("finetune", "--resume", "--run-dir", run_dir),
                          f"{train} changed ({size} bytes, sha256 ",
                          f"{train.stat().st_size} bytes, sha256 ",
                          f"now) since {run_dir} started", "pass --allow-changed-data")
    result = kbc("finetune", "--resume", "--run-dir", run_dir, "--allow-changed-data")
    assert result.code == 0, result.err[-3000:]
    assert f"now); resuming {run_dir} on it, as --allow-changed-data says" in result.err


def test_resume_hints_name_the_command_of_the_run(kbc, run_copy):
    run_dir, train = run_copy
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "command": "distill"}))
    (run_dir / "model.keras").unlink()
    hint = f"continue it with `kbc distill --resume --run-dir {run_dir}`"
    assert_one_line_error(kbc("evaluate", run_dir, train), "has not finished training", hint)
    assert_one_line_error(kbc("finetune", "--resume", "--run-dir", run_dir),
                          "is a `kbc distill` run, not a `kbc finetune` run", hint)
