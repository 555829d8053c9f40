"""The training flags of `kbc` as a user meets them: `--optimizer`, `--accumulation-steps`,
`--strategy`'s choices, `kbc pretrain --pack` and `--write-tfrecords`, SQuAD 2.0's best
null-score threshold in `kbc evaluate` and `--null-score-threshold` in predict and export,
`--quiet` and `--tf-logs`; a resumed run keeps its choices, and bad combinations end with one
line. `--quiet`'s and `--tf-logs`' checks (the first command of a run, for `--quiet`) and the
parser's refusals run `kbc` in a process of its own (TensorFlow's start-up log shows only
there); the other commands run in this process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_core.cli import UserError, build_parser
from keras_bert_core.cli.options import OPTIMIZERS, STRATEGIES, TrainingOptions
from keras_bert_core.cli.training_setup import compile_for_training
from tests.cli.conftest import DATA, VOCAB, assert_one_line_error

# kbc's own default for TensorFlow's log, not the test session's.
ENV = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
TINY_RUN = ("--vocab", VOCAB, "--seq-length", 32, "--batch-size", 4)


def run_kbc(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "keras_bert_core.cli", *map(str, argv)],
                          capture_output=True, text=True, env=ENV, cwd=cwd, timeout=600)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def saved_optimizer(run_dir):
    """The optimizer config inside a run's model.keras (read without loading the model)."""
    import zipfile

    with zipfile.ZipFile(run_dir / "model.keras") as archive:
        config = json.loads(archive.read("config.json"))
    return config["compile_config"]["optimizer"]


def test_the_choices_are_the_library_s():
    # cli/options.py spells them out so that `kbc --help` loads no TensorFlow.
    from keras_bert_core import optimizers
    from keras_bert_core.training import distribution

    assert set(OPTIMIZERS) == set(optimizers._OPTIMIZERS)
    assert STRATEGIES == distribution.STRATEGIES


@pytest.mark.parametrize("command", ["pretrain", "finetune", "distill"])
def test_every_training_command_takes_the_training_flags(command):
    args = build_parser().parse_args([command, "--optimizer", "lamb", "--accumulation-steps",
                                      "4", "--strategy", "mirrored", "--quiet"])
    options = TrainingOptions.from_args(args)
    assert (options.optimizer, options.accumulation_steps, options.strategy) == (
        "lamb", 4, "mirrored")
    assert args.quiet and not args.tf_logs


@pytest.mark.parametrize("argv, fragment", [
    (["--optimizer", "sgd"], "argument --optimizer: invalid choice: 'sgd'"),
    (["--accumulation-steps", "0"], "argument --accumulation-steps: 0 is less than 1"),
    (["--strategy", "bogus"], "argument --strategy: invalid choice: 'bogus'"),
    (["--learning-rate", "-1"], "argument --learning-rate: -1.0 is not above 0"),
    (["--warmup-fraction", "2"], "argument --warmup-fraction: 2.0 is not in [0, 1)"),
])
def test_bad_training_flags_are_refused_by_the_parser(argv, fragment, corpus):
    result = run_kbc("pretrain", corpus, *TINY_RUN, *argv)
    assert_one_line_error(result, fragment)


def test_accumulation_is_refused_under_mirrored_strategies(kbc, corpus, tmp_path):
    # Keras's accumulation fails there ("merge_call called while defining a new graph").
    result = kbc("pretrain", corpus, *TINY_RUN, "--accumulation-steps", 2, "--strategy",
                     "mirrored", "--run-dir", tmp_path / "run")
    assert_one_line_error(result, "--accumulation-steps 2 works under --strategy default or "
                                  "one_device, not mirrored")
    assert not (tmp_path / "run").exists()


def test_tpu_without_a_tpu_names_the_option(kbc, corpus, tmp_path, monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    result = kbc("pretrain", corpus, *TINY_RUN, "--strategy", "tpu", "--run-dir",
                 tmp_path / "run")
    # It told a kbc user to pass "tpu_address='local'", a Python argument.
    assert_one_line_error(result, "No TPU reachable", "--tpu-address local")
    assert not (tmp_path / "run").exists()


class Compiled:
    """Stands in for a model: keeps what `compile_for_training` compiles it with."""

    def compile(self, optimizer, jit_compile):
        self.optimizer = optimizer


def test_the_schedule_counts_updates_when_batches_accumulate():
    options = TrainingOptions(learning_rate=1e-3, warmup_fraction=0.2, optimizer="lamb",
                              accumulation_steps=4)
    model = Compiled()
    compile_for_training(model, options, num_train_steps=42)  # batches: 10 updates
    optimizer = model.optimizer
    assert type(optimizer).__name__ == "BertLamb"
    assert optimizer.gradient_accumulation_steps == 4
    schedule = optimizer._learning_rate  # Keras steps it once a batch
    assert (schedule.decay_steps, schedule.warmup_steps) == (40, 8)
    with pytest.raises(UserError, match="--accumulation-steps 4 is more than the 3 batches"):
        compile_for_training(Compiled(), options, num_train_steps=3)


@pytest.mark.slow
def test_pretrain_packed_with_lamb_and_accumulation_then_resumed(kbc, corpus, tiny_config,
                                                                 tmp_path):
    run_dir = tmp_path / "run"
    first = run_kbc("pretrain", corpus, *TINY_RUN, "--config", tiny_config, "--pack",
                    "--optimizer", "lamb", "--accumulation-steps", 2, "--epochs", 2,
                    "--steps-per-epoch", 3, "--backup-every", 2, "--learning-rate", 1e-3,
                    "--quiet", "--run-dir", run_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    # --quiet: the result alone; no progress bar, note, summary or TensorFlow log.
    assert first.stdout == f"{run_dir}\n" and first.stderr == ""
    arguments = json.loads((run_dir / "config.json").read_text())["arguments"]
    assert (arguments["optimizer"], arguments["accumulation_steps"], arguments["pack"],
            arguments["pair_task"]) == ("lamb", 2, True, "none")
    # Backups and logs count batches (6), not the optimizer's updates (3), so that a resumed
    # run continues at the right batch.
    assert sorted(os.listdir(run_dir / "backup")) == ["step_00000004.weights.h5",
                                                      "step_00000006.weights.h5"]
    epochs = [r for r in read_jsonl(run_dir / "metrics.jsonl") if r["event"] == "epoch"]
    assert [r["step"] for r in epochs] == [3, 6]
    # The schedule decays over the 3 updates = 6 batches: halfway after the first epoch.
    assert epochs[0]["learning_rate"] == pytest.approx(0.5e-3, rel=1e-4)
    assert "nsp_loss" not in epochs[0]  # packed rows train the masked LM alone

    # Lose the last epoch and resume with no options: the run's own choices come back.
    os.remove(run_dir / "backup" / "step_00000006.weights.h5")
    os.remove(run_dir / "model.keras")
    resumed = kbc("pretrain", "--resume", "--run-dir", run_dir)
    assert resumed.code == 0, resumed.err[-3000:]
    assert f"resuming {run_dir} after step 4 of 6" in resumed.err
    optimizer = saved_optimizer(run_dir)
    assert optimizer["class_name"] == "BertLamb"
    assert optimizer["config"]["gradient_accumulation_steps"] == 2
    steps = [r["step"] for r in read_jsonl(run_dir / "metrics.jsonl") if r["event"] == "epoch"]
    assert steps == [3, 6]  # the resumed epoch replaces the lost one's record


def test_pack_refuses_what_it_cannot_pack(kbc, corpus, tmp_path):
    refused = kbc("pretrain", corpus, *TINY_RUN, "--pack", "--pair-task", "next_sentence",
                  "--run-dir", tmp_path / "run")
    assert_one_line_error(refused, "--pack puts several documents in a row",
                          "--pair-task next_sentence", "--pair-task none")
    assert not (tmp_path / "run").exists()
    shard = tmp_path / "rows.tfrecord"
    shard.write_bytes(b"")
    refused = kbc("pretrain", shard, *TINY_RUN, "--pack", "--run-dir", tmp_path / "run")
    assert_one_line_error(refused, "--pack packs the documents of text files",
                          "TFRecords")


def test_packed_batches_hold_several_documents_a_row(corpus):
    from keras_bert_core.cli.pretrain import packed_pretraining_data
    from keras_bert_core.text import BertTokenizer

    tokenizer = BertTokenizer(str(VOCAB))
    x, y, weights = next(iter(packed_pretraining_data(
        [str(corpus)], tokenizer, seq_length=64, batch_size=4, max_predictions=8, seed=1)))
    documents = x["padding_mask"].numpy().max(axis=1)
    assert (documents >= 2).all(), documents  # the corpus's documents are short
    starts = x["token_ids"].numpy() == tokenizer.cls_id
    assert (starts.sum(axis=1) == documents).all()  # each document opens with [CLS]
    assert set(y) == set(weights) == {"mlm"}


@pytest.mark.slow
def test_write_tfrecords_then_train_on_them(kbc, corpus, tiny_config, tmp_path):
    output = tmp_path / "records"
    written = kbc("pretrain", corpus, "--vocab", VOCAB, "--seq-length", 32, "--pair-task",
                  "sentence_order", "--write-tfrecords", output, "--shards", 2,
                  "--dupe-factor", 2, cwd=tmp_path)
    assert written.code == 0, written.err[-3000:]
    assert written.out == f"{output}\n"
    shards = sorted(output.glob("*.tfrecord"))
    assert [path.name for path in shards] == ["pretraining-00000-of-00002.tfrecord",
                                              "pretraining-00001-of-00002.tfrecord"]
    assert (output / "vocab.txt").read_text() == VOCAB.read_text()
    assert "wrote" in written.err and not list(tmp_path.glob("runs"))  # trained nothing

    before = {path.name: path.read_bytes() for path in shards}
    again = kbc("pretrain", corpus, "--vocab", VOCAB, "--write-tfrecords", output)
    assert_one_line_error(again, f"{output} already exists", "--overwrite")
    assert {path.name: path.read_bytes() for path in shards} == before

    trained = kbc("pretrain", *shards, "--vocab", output, "--config", tiny_config,
                  "--seq-length", 32, "--batch-size", 4, "--epochs", 1, "--steps-per-epoch", 2,
                  "--pair-task", "sentence_order", "--quiet", "--run-dir", tmp_path / "run")
    assert trained.code == 0, trained.err[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "nsp_loss" in metrics  # the sentence-order labels came back


def test_write_tfrecords_refuses_what_it_cannot_write(kbc, corpus, tmp_path):
    refused = kbc("pretrain", corpus, *TINY_RUN, "--pack", "--write-tfrecords",
                  tmp_path / "records")
    assert_one_line_error(refused, "--write-tfrecords writes unpacked rows", "--pack")
    assert not (tmp_path / "records").exists()
    ignored = kbc("pretrain", corpus, *TINY_RUN, "--shards", 4, "--run-dir", tmp_path / "run")
    assert_one_line_error(ignored, "--shards and --dupe-factor shape the files "
                                   "--write-tfrecords writes")  # were ignored without a word
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_evaluate_reports_squad_2_best_null_score_threshold(kbc_fd, tiny_config, tmp_path):
    squad = DATA / "squad_v2.json"
    run_dir = tmp_path / "run"
    trained = run_kbc("finetune", "--task", "squad", "--train", squad, "--vocab", VOCAB,
                      "--config", tiny_config, "--seq-length", 32, "--doc-stride", 16,
                      "--max-query-length", 12, "--batch-size", 2, "--epochs", 2,
                      "--optimizer", "lamb", "--accumulation-steps", 2, "--strategy",
                      "one_device", "--quiet", "--run-dir", run_dir)
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert trained.stdout == f"{run_dir}\n" and trained.stderr == ""
    optimizer = saved_optimizer(run_dir)
    assert optimizer["class_name"] == "BertLamb"
    assert optimizer["config"]["gradient_accumulation_steps"] == 2

    evaluated = kbc_fd("evaluate", run_dir, squad, "--quiet")
    assert evaluated.code == 0, evaluated.err[-3000:]
    assert evaluated.err == ""
    metrics = json.loads(evaluated.out)
    assert isinstance(metrics["best_null_score_threshold"], float)
    assert np.isfinite(metrics["best_null_score_threshold"])
    # The best threshold does at least as well as the 0.0 that kbc answers with.
    assert metrics["f1_at_best_threshold"] >= metrics["f1"]
    assert 0.0 <= metrics["exact_match_at_best_threshold"] <= 100.0

    v1 = kbc_fd("evaluate", run_dir, DATA / "squad_v1.json", "--quiet")
    assert v1.code == 0, v1.err[-3000:]
    assert "best_null_score_threshold" not in json.loads(v1.out)  # nothing to search

    # --null-score-threshold moves the line between an answer and none, in predict and in
    # the exports: far below every margin nothing is answered, far above always a span.
    for margin, nothing in ((-1e9, True), (1e9, False)):
        predicted = kbc_fd("predict", run_dir, "--input", squad, "--quiet",
                           "--null-score-threshold", margin)
        assert predicted.code == 0, predicted.err[-3000:]
        answers = [json.loads(line)["answer"] for line in predicted.out.splitlines()]
        assert len(answers) == 3 and all((answer == "") is nothing for answer in answers)
    requests = tmp_path / "questions.jsonl"
    requests.write_text("".join(json.dumps({"question": q, "context": c}) + "\n" for q, c in (
        ("Who wrote it?", "The book was written by Ann Smith in Paris."),
        ("Where is it?", "It lies north of the old river bridge."))))
    for margin, nothing in ((-1e9, True), (1e9, False)):
        exported = kbc_fd("export", run_dir, "-o", tmp_path / f"export{margin}", "--format",
                          "saved_model", "--null-score-threshold", margin, "--quiet")
        assert exported.code == 0, exported.err[-3000:]
        served = kbc_fd("predict", tmp_path / f"export{margin}" / "saved_model", "--input",
                        requests, "--quiet")
        assert served.code == 0, served.err[-3000:]
        answers = [json.loads(line)["answer"] for line in served.out.splitlines()]
        assert len(answers) == 2 and all((answer == "") is nothing for answer in answers)


def test_tf_logs_shows_tensorflow_s_log(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\nthe dog sat on the log.\n" * 30)
    shown = run_kbc("vocab", corpus, "--vocab-size", 60, "-o", tmp_path / "vocab.txt",
                    "--tf-logs")
    assert shown.returncode == 0, shown.stderr[-3000:]
    # TensorFlow's C++ log lines look like "2026-11-24 07:00:00.000000: I external/...".
    assert ": I " in shown.stderr
