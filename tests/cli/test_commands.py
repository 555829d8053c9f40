"""Every `kbc` subcommand end to end on tiny data: the files it writes and what it answers."""

import importlib
import io
import json
import os
import platform
import re
import shutil

import keras
import numpy as np
import pytest

from keras_bert_core.cli import COMMANDS, build_parser, training_environment
from keras_bert_core.cli.run_dir import RunDirectory
from tests.cli.conftest import DATA, VOCAB

PNG_MAGIC = b"\x89PNG"


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_kbc_alone_lists_every_command(kbc):
    result = kbc()
    assert result.code == 0
    assert all(name in result.out for name in COMMANDS)


@pytest.mark.parametrize("user_value", [None, "0"])
def test_training_commands_set_tensorflows_environment_unless_the_user_chose(
        kbc, monkeypatch, user_value):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    names = ("TF_ENABLE_ONEDNN_OPTS", "TF_CPU_ALLOCATOR_USE_BFC")
    for name in names:
        if user_value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, user_value)
    seen = {}
    for command in ("finetune", "vocab"):
        module = importlib.import_module(f"keras_bert_core.cli.{COMMANDS[command][0]}")
        monkeypatch.setattr(module, "run", lambda args: seen.update(
            {args.command: tuple(os.environ.get(name) for name in names)}))
    kbc("finetune", "--task", "classify", "--train", "train.csv")
    kbc("vocab", "corpus.txt", "--output", "vocab.txt")
    chosen = (user_value, user_value) if user_value else ("1", "true")
    assert seen == {"finetune": chosen, "vocab": (user_value, user_value)}
    assert all(os.environ.get(name) == user_value for name in names)


def test_only_x86_gets_onednn_kernels():
    assert training_environment("aarch64") == {"TF_CPU_ALLOCATOR_USE_BFC": "true"}
    assert training_environment("AMD64")["TF_ENABLE_ONEDNN_OPTS"] == "1"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"kbc {command}" in help_text
    # A flag's default (True for `--no-...`) is no default to a user, and a help that names
    # its default says it once.
    assert "(default: True)" not in help_text
    assert not re.search(r"default: [^()]*\) \(default:", help_text), help_text


def test_vocab_learns_a_vocabulary_and_keeps_existing_files(kbc, corpus, tmp_path):
    output = tmp_path / "vocab.txt"
    result = kbc("vocab", corpus, "--output", output, "--vocab-size", 120)
    assert result.code == 0, result.err
    tokens = output.read_text().splitlines()
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(tokens) <= 120
    corpus_words = set(corpus.read_text().replace(".", " ").split())
    assert any(len(token) > 3 and token in corpus_words for token in tokens)
    again = kbc("vocab", corpus, "--output", output)
    assert again.code == 2 and "already exists" in again.err
    assert kbc("vocab", corpus, "--output", output, "--vocab-size", 100, "--overwrite").code == 0


@pytest.mark.parametrize("kind", ["bpe", "sentencepiece"])
def test_vocab_learns_bpe_and_sentencepiece_vocabularies(kbc, corpus, tmp_path, kind):
    output = tmp_path / kind
    result = kbc("vocab", corpus, "--kind", kind, "--output", output, "--vocab-size", 400)
    assert result.code == 0, result.err
    text = corpus.read_text().splitlines()[0]
    if kind == "bpe":
        from tokenizers import ByteLevelBPETokenizer

        assert sorted(os.listdir(output)) == ["merges.txt", "vocab.json"]
        vocab = json.loads((output / "vocab.json").read_text())
        assert [vocab[t] for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, 4]
        reference = ByteLevelBPETokenizer(str(output / "vocab.json"), str(output / "merges.txt"))
        # Learned merges: a corpus line takes fewer tokens than it has bytes.
        assert len(reference.encode(text).ids) < len(text.encode()) / 2
    else:
        import sentencepiece

        model = sentencepiece.SentencePieceProcessor(model_file=str(output))
        assert [model.id_to_piece(i) for i in range(5)] == [
            "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
        assert model.unk_id() not in model.encode(text.lower())
    again = kbc("vocab", corpus, "--kind", kind, "--output", output)
    assert again.code == 2 and "already exists" in again.err
    assert kbc("vocab", corpus, "--kind", "bpe", "--cased", "-o", tmp_path / "x").code == 2
    small = kbc("vocab", corpus, "--kind", "bpe", "--vocab-size", 100, "-o", tmp_path / "y")
    assert small.code == 2 and "starts with 261 tokens" in small.err


def test_pretrain_writes_a_complete_run_directory(pretrain_run):
    run = RunDirectory.open(pretrain_run)
    config = run.config()
    assert config["command"] == "pretrain"
    assert config["arguments"]["steps_per_epoch"] == 2
    assert config["model_config"]["hidden_size"] == 32
    assert config["model_config"]["vocab_size"] == len(VOCAB.read_text().split("\n")) - 1
    assert [r["step"] for r in run.epoch_metrics()] == [2, 4]
    assert set(run.read_json("metrics.json")) >= {"loss", "mlm_accuracy", "nsp_accuracy"}
    assert (pretrain_run / "curves.png").read_bytes().startswith(PNG_MAGIC)
    assert sorted(p.name for p in (pretrain_run / "checkpoints").iterdir()) == [
        "epoch_0001.weights.h5", "epoch_0002.weights.h5"]
    assert list((pretrain_run / "logs").rglob("events.out.tfevents.*"))
    assert (pretrain_run / "backup").is_dir()
    assert isinstance(keras.saving.load_model(pretrain_run / "model.keras", compile=False),
                      keras.Model)


def test_pretrain_continues_a_checkpoint_from_tfrecords_in_mixed_precision_with_xla(
        kbc, corpus, pretrain_run, tmp_path):
    from keras_bert_core.pretraining.tfrecords import write_pretraining_tfrecords
    from keras_bert_core.text import BertTokenizer

    shards = write_pretraining_tfrecords(corpus, BertTokenizer(str(VOCAB)),
                                         str(tmp_path / "data" / "corpus"), seq_length=32)
    result = kbc("pretrain", *shards, "--checkpoint", pretrain_run, "--batch-size", 4,
                 "--seq-length", 32, "--epochs", 1, "--steps-per-epoch", 2,
                 "--mixed-precision", "bfloat16", "--xla", "--run-dir", tmp_path / "run")
    assert result.code == 0, result.err
    config = RunDirectory.open(tmp_path / "run").config()
    assert config["arguments"]["xla"] is True
    assert config["model_config"] == RunDirectory.open(pretrain_run).config()["model_config"]
    model = keras.saving.load_model(tmp_path / "run" / "model.keras", compile=False)
    assert model.encoder.blocks[0].dtype_policy.name == "mixed_bfloat16"


def test_pretrain_masked_lm_only_from_a_next_sentence_checkpoint(kbc, corpus, pretrain_run,
                                                                 tmp_path):
    from keras_bert_core.models import BertPretrainer
    from keras_bert_core.pretraining.tfrecords import write_pretraining_tfrecords
    from keras_bert_core.text import BertTokenizer

    shards = write_pretraining_tfrecords(corpus, BertTokenizer(str(VOCAB)),
                                         str(tmp_path / "data" / "corpus"), seq_length=32,
                                         next_sentence=False)
    arguments = [*shards, "--checkpoint", pretrain_run, "--batch-size", 4, "--seq-length", 32,
                 "--epochs", 1, "--steps-per-epoch", 2]
    refused = kbc("pretrain", *arguments, "--run-dir", tmp_path / "refused")
    assert refused.code == 2 and "hold no next-sentence labels" in refused.err
    assert "--no-next-sentence" in refused.err and "Traceback" not in refused.err

    result = kbc("pretrain", *arguments, "--no-next-sentence", "--run-dir", tmp_path / "run")
    assert result.code == 0, result.err
    assert "no pretrained weights" not in result.err  # the masked-LM head came along
    run = RunDirectory.open(tmp_path / "run")
    assert run.config()["arguments"]["next_sentence"] is False
    assert {"loss", "mlm_accuracy"} <= set(run.read_json("metrics.json"))
    assert "nsp_accuracy" not in run.read_json("metrics.json")
    model = keras.saving.load_model(tmp_path / "run" / "model.keras", compile=False)
    assert isinstance(model, BertPretrainer) and model.next_sentence is None


def test_classifier_run_evaluates_and_predicts(kbc, classify_run, tmp_path, monkeypatch):
    metrics = RunDirectory.open(classify_run).read_json("metrics.json")
    assert set(metrics) == {"train", "validation"}
    assert 0.0 <= metrics["validation"]["accuracy"] <= 1.0
    assert (classify_run / "curves.png").read_bytes().startswith(PNG_MAGIC)

    evaluated = kbc("evaluate", classify_run, DATA / "sentiment.csv",
                    "--output", tmp_path / "metrics.json")
    assert evaluated.code == 0, evaluated.err
    scores = json.loads(evaluated.out)
    assert scores == json.loads((tmp_path / "metrics.json").read_text())
    assert scores["accuracy"] == pytest.approx(metrics["validation"]["accuracy"])

    monkeypatch.setattr("sys.stdin", io.StringIO("A warm, funny film.\n\nThe plot drags.\n"))
    predicted = kbc("predict", classify_run / "model.keras")
    assert predicted.code == 0, predicted.err
    answers = json_lines(predicted.out)
    assert [a["text"] for a in answers] == ["A warm, funny film.", "The plot drags."]
    for answer in answers:
        assert set(answer["probabilities"]) == {"negative", "neutral", "positive"}
        assert answer["label"] == max(answer["probabilities"], key=answer["probabilities"].get)
        assert sum(answer["probabilities"].values()) == pytest.approx(1.0, abs=1e-4)


def test_export_writes_servable_files_that_agree_with_the_model(kbc, classify_run,
                                                                 classify_export, tmp_path):
    output = classify_export
    assert (output / "saved_model" / "saved_model.pb").is_file()
    assert (output / "saved_model" / "assets" / "vocab.txt").is_file()
    float32, dynamic = output / "model.tflite", output / "model_dynamic.tflite"
    assert dynamic.stat().st_size < float32.stat().st_size

    texts = tmp_path / "texts.txt"
    texts.write_text("A warm, funny film.\nThe plot drags.\nIt was fine.\n")
    keras_answers = json_lines(kbc("predict", classify_run, "--input", texts).out)
    model_file = shutil.copy(classify_run / "model.keras", tmp_path / "clf.keras")  # alone
    assert json_lines(kbc("predict", model_file, "--input", texts).out) == keras_answers
    for model in (output / "saved_model", float32):
        predicted = kbc("predict", model, "--input", texts)
        assert predicted.code == 0, predicted.err
        answers = json_lines(predicted.out)
        assert [a["label_name"] for a in answers] == [a["label"] for a in keras_answers]
        for answer, expected in zip(answers, keras_answers, strict=True):
            probabilities = [expected["probabilities"][name]
                             for name in ("negative", "neutral", "positive")]
            np.testing.assert_allclose(answer["probabilities"], probabilities, atol=1e-4)
    again = kbc("export", classify_run, "--output", output)
    assert again.code == 2 and "already exists" in again.err


def test_export_pads_tflite_texts_to_seq_length_only_when_asked(kbc, classify_run,
                                                                classify_export, tmp_path):
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    def fixed_width_tensors(path):
        """How many of the file's [batch, width, ...] tensors have the run's seq_length (32)
        as a fixed width."""
        interpreter = InterpreterWithCustomOps(
            model_path=str(path), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
        return sum(len(d["shape_signature"]) == 3 and d["shape_signature"][1] == 32
                   for d in interpreter.get_tensor_details())

    # Without the flag: the float32 file of `classify_export`, made as `--format tflite` makes it.
    counts = [fixed_width_tensors(classify_export / "model.tflite")]
    exported = kbc("export", classify_run, "--output", tmp_path / "export", "--format", "tflite",
                   "--tflite-fixed-shape")
    assert exported.code == 0, exported.err
    counts.append(fixed_width_tensors(tmp_path / "export" / "model.tflite"))
    # Fixed: every layer's hidden states, attention scores... have width 32.
    assert counts[1] > counts[0] + 10


def test_convert_writes_a_keras_file_with_the_vocabulary(kbc, tmp_path):
    from keras_bert_core.checkpoints import load_checkpoint, save_google_research_checkpoint
    from keras_bert_core.config import BertConfig
    from keras_bert_core.models import BertEncoder
    from tests.cli.conftest import TINY_CONFIG

    encoder = BertEncoder(BertConfig(vocab_size=len(VOCAB.read_text().split()), **TINY_CONFIG))
    source = tmp_path / "google_research"
    save_google_research_checkpoint(encoder, str(source))
    shutil.copy(VOCAB, source / "vocab.txt")
    output = tmp_path / "converted" / "encoder.keras"
    result = kbc("convert", source, output)
    assert result.code == 0, result.err
    assert "google_research" in result.err
    converted, config = load_checkpoint(str(output))
    assert config == encoder.config
    for expected, actual in zip(encoder.weights, converted.weights, strict=True):
        np.testing.assert_array_equal(expected.numpy(), actual.numpy())
    assert (output.parent / "vocab.txt").read_text() == VOCAB.read_text()


def test_convert_beside_another_vocabulary_is_refused(kbc, tmp_path, tiny_config):
    # The output used to be written beside the other file ("kept ... already there"), and
    # `kbc finetune --checkpoint` then read it with that vocabulary.
    from keras_bert_core.config import BertConfig
    from keras_bert_core.models import BertEncoder

    source = tmp_path / "run"
    source.mkdir()
    shutil.copy(VOCAB, source / "vocab.txt")
    config = BertConfig.from_json(tiny_config)
    encoder = BertEncoder(BertConfig(**{**config.to_dict(),
                                        "vocab_size": len(VOCAB.read_text().split())}))
    encoder.save(source / "encoder.keras")
    other = tmp_path / "other"
    other.mkdir()
    (other / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nmine\n")
    result = kbc("convert", source / "encoder.keras", other / "encoder.keras")
    assert result.code == 2 and "Traceback" not in result.err
    assert f"{other / 'vocab.txt'} is already there and is not the checkpoint's" in result.err
    assert os.listdir(other) == ["vocab.txt"]
    assert (other / "vocab.txt").read_text().endswith("mine\n")
    same = tmp_path / "same"
    same.mkdir()
    shutil.copy(VOCAB, same / "vocab.txt")
    assert kbc("convert", source / "encoder.keras", same / "encoder.keras").code == 0
    with_config = kbc("convert", source / "encoder.keras", tmp_path / "c.keras", "--config",
                      tiny_config)
    assert with_config.code == 2 and "carries its own config; leave --config out" in \
        with_config.err  # was a ValueError traceback telling to "not pass config="
