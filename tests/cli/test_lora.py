"""`kbc finetune --lora`: a LoRA fine-tune that learns, a run directory whose model.keras
(merged) and adapters.lora.h5 (alone) give the adapter model's answers through evaluate,
predict and export, `--resume` with the adapters intact, and one-line errors."""

import json
import random

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.cli.run_dir import LORA_FILE, RunDirectory
from keras_bert_core.models.lora import ALSO_TRAIN, PROJECTIONS, TARGET_GROUPS
from keras_bert_core.training import completed_steps
from tests.cli.conftest import VOCAB
from tests.cli.test_errors import assert_user_error
from tests.cli.test_training_reliability import kill_at_step

# Each text holds one marker word of its label among neutral words: the [CLS] output must
# attend to it, which the frozen encoder does not do on its own.
MARKERS = {"warm": ("fine", "great"), "cold": ("drags", "dropped")}


def keyword_rows(count, seed):
    words = [w for w in VOCAB.read_text().split() if w.isalpha()]
    neutral = [w for w in words if all(w not in m for m in MARKERS.values())]
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        label = sorted(MARKERS)[index % 2]
        text = rng.choices(neutral, k=3)
        text.insert(rng.randrange(4), rng.choice(MARKERS[label]))
        rows.append((" ".join(text), label))
    return rows


def write_csv(path, rows):
    path.write_text("text,label\n" + "".join(f"{text},{label}\n" for text, label in rows))
    return path


@pytest.fixture(scope="module")
def keyword_task(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keywords")
    # Many rows and few epochs: an epoch's end (validation, checkpoint) costs more than its
    # steps.
    return (write_csv(folder / "train.csv", keyword_rows(480, seed=0)),
            write_csv(folder / "dev.csv", keyword_rows(48, seed=1)))


def adapter_model(run_dir, base):
    """The run's classifier as LoRA holds it: the base checkpoint's encoder, the run's
    adapters and head (adapters.lora.h5) on top."""
    merged = keras.saving.load_model(run_dir / "model.keras", compile=False)
    model = type(merged).from_config(merged.get_config())
    encoder, _ = kbc.load_checkpoint(str(base / "model.keras"))
    model.encoder.set_weights(encoder.get_weights())
    kbc.load_lora_weights(model, str(run_dir / LORA_FILE))
    return model, merged, encoder


def features(run_dir, texts, seq_length):
    preprocessor = kbc.BertPreprocessor(str(run_dir), seq_length=seq_length)
    return {k: keras.ops.convert_to_numpy(v) for k, v in preprocessor(texts).items()}


def probabilities(model, x):
    return keras.ops.convert_to_numpy(keras.ops.softmax(model(x, training=False), axis=-1))


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_lora_fine_tune_learns_and_every_command_gives_the_adapter_models_answers(
        kbc, pretrain_run, keyword_task, tmp_path):
    import tensorflow as tf

    train, dev = keyword_task
    run_dir = tmp_path / "run"
    trained = kbc("finetune", "--task", "classify", "--train", train, "--validation", dev,
                  "--checkpoint", pretrain_run, "--seq-length", 16, "--batch-size", 8,
                  "--epochs", 3, "--learning-rate", 3e-2, "--lora", 4, "--run-dir", run_dir)
    assert trained.code == 0, trained.err
    # Adapters on query and value of 1 block of width 32, and the head (32 x 2 + 2).
    assert "LoRA rank 4 (alpha 4) on query, value: 2 layers, 512 adapter parameters" in (
        trained.err)
    assert "trainable: 578 of " in trained.err
    run = RunDirectory.open(run_dir)
    assert run.config()["arguments"]["lora"] == 4
    # It learned: chance is 0.5 on these 48 held-out texts, the untrained head's level.
    accuracy = run.read_json("metrics.json")["validation"]["accuracy"]
    assert accuracy >= 0.75
    assert (run_dir / LORA_FILE).stat().st_size < (run_dir / "model.keras").stat().st_size / 4

    model, merged, base = adapter_model(run_dir, pretrain_run)
    assert not any("lora" in w.path for w in merged.weights)
    texts = [text for text, _ in keyword_rows(48, seed=1)]
    x = features(run_dir, texts, 16)
    expected = probabilities(model, x)
    np.testing.assert_allclose(probabilities(merged, x), expected, atol=1e-5)
    # The encoder stayed frozen but for the merged query and value kernels.
    merged_encoder = {w.path: keras.ops.convert_to_numpy(w) for w in merged.encoder.weights}
    for weight in base.weights:
        same = np.array_equal(merged_encoder[weight.path], keras.ops.convert_to_numpy(weight))
        adapted = weight.path.endswith(("query/kernel", "value/kernel"))
        assert same != adapted, weight.path

    evaluated = kbc("evaluate", run_dir, dev)
    assert evaluated.code == 0, evaluated.err
    assert json.loads(evaluated.out)["accuracy"] == pytest.approx(accuracy)

    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    predicted = json_lines(kbc("predict", run_dir, "--input", tmp_path / "texts.txt").out)
    np.testing.assert_allclose(
        [[a["probabilities"][name] for name in ("cold", "warm")] for a in predicted],
        expected, atol=1e-4)  # JSON rounds

    exported = kbc("export", run_dir, "--output", tmp_path / "export", "--format",
                   "saved_model")
    assert exported.code == 0, exported.err
    serving = tf.saved_model.load(str(tmp_path / "export" / "saved_model"))
    served = serving.signatures["serving_default"](text=tf.constant(texts))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)


@pytest.mark.slow
def test_a_killed_lora_run_resumes_with_its_adapters(kbc, pretrain_run, keyword_task, tmp_path):
    train, _ = keyword_task
    run_dir = tmp_path / "run"
    argv = ("finetune", "--task", "classify", "--train", train, "--checkpoint", pretrain_run,
            "--seq-length", 16, "--batch-size", 4, "--epochs", 1, "--learning-rate", 1e-2,
            "--lora", 4, "--lora-targets", "attention", "--backup-every", 10,
            "--run-dir", run_dir)
    killed_at = kill_at_step(argv, run_dir, 30, cwd=tmp_path)
    backed_up = completed_steps(str(run_dir))
    assert 0 < backed_up <= killed_at and not (run_dir / "model.keras").exists()

    resumed = kbc("finetune", "--resume", "--run-dir", run_dir, cwd=tmp_path)
    assert resumed.code == 0, resumed.err[-3000:]
    assert f"after step {backed_up} of 120" in resumed.err
    # The base checkpoint plus the adapters file is the model the run saved: a resume that
    # lost the adapters (Keras's weight files keep merged kernels only) would have trained
    # new ones over the merged kernels, which the file cannot reproduce.
    model, merged, _ = adapter_model(run_dir, pretrain_run)
    x = features(run_dir, [text for text, _ in keyword_rows(8, seed=2)], 16)
    np.testing.assert_allclose(probabilities(merged, x), probabilities(model, x), atol=1e-5)
    b = [w for w in model.weights if w.path.endswith("lora_kernel_b")]
    assert len(b) == 4 and all(np.abs(keras.ops.convert_to_numpy(w)).max() > 0 for w in b)


@pytest.mark.parametrize("options, fragments", [
    (("--lora", 64), ["--lora 64: rank 64 is larger than",
                      "block_0/attention/query", "(32 x 32)", "at most 32"]),
    (("--lora", 4, "--lora-targets", "query", "keys"),
     ["--lora-targets keys: unknown; choose from query, key, value"]),
    (("--lora", 4, "--lora-also-train", "embeddings"),
     ["--lora-also-train embeddings: unknown; choose from bias, layer_norm, pooler"]),
    (("--lora-alpha", 8, "--lora-targets", "all"),
     ["--lora-targets and --lora-alpha without --lora RANK"]),
])
def test_bad_lora_options_end_in_one_line_and_write_nothing(kbc, pretrain_run, keyword_task,
                                                           tmp_path, options, fragments):
    run_dir = tmp_path / "run"
    result = kbc("finetune", "--task", "classify", "--train", keyword_task[0],
                 "--checkpoint", pretrain_run, "--seq-length", 16, "--batch-size", 8,
                 *options, "--run-dir", run_dir)
    assert_user_error(result, *fragments)
    assert not run_dir.exists()


@pytest.mark.parametrize("option, value, message", [
    ("--lora", 0, "argument --lora: 0 is less than 1"),
    ("--lora", "eight", "argument --lora: 'eight' is not a whole number"),
    ("--lora-alpha", 0, "argument --lora-alpha: 0.0 is not above 0"),
])
def test_lora_numbers_are_checked_by_the_parser(kbc, capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_info:
        kbc("finetune", "--task", "classify", option, value)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_names_every_lora_target_and_weight(kbc, capsys):
    with pytest.raises(SystemExit):
        kbc("finetune", "--help")
    text = " ".join(capsys.readouterr().out.split())
    lora = text[text.index("LoRA (low-rank adapters)"):]
    for name in [*PROJECTIONS, *TARGET_GROUPS, *ALSO_TRAIN]:
        assert name in lora
