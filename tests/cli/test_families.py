"""`kbc` on BERT's family: RoBERTa (byte-level BPE), ALBERT (SentencePiece), DistilBERT
(WordPiece, no pooler) and DeBERTa-v3 (SentencePiece, relative positions). Fine-tuning
from each family's Hugging Face checkpoint folder (its tokenizer files found there) learns
an easy task, and the run directory, which keeps the
tokenizer's own files, is evaluated and answers raw text; pretraining from each family's
preset packs and masks its way; mistakes get one line."""

import contextlib
import io
import json
import os
import random
import shutil
from unittest import mock

import pytest

from keras_bert_core.cli import main
from keras_bert_core.cli.run_dir import RunDirectory
from tests.cli.conftest import TINY_CONFIG, assert_one_line_error

FAMILIES = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                        "families")
# The files each family's run directory keeps its tokenizer in.
TOKENIZER_FILES = {"roberta": {"vocab.json", "merges.txt"}, "albert": {"spiece.model"},
                   "distilbert": {"vocab.txt"}, "deberta": {"spm.model"}}
DEBERTA = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data", "deberta",
                       "mlm")
WORDS = "the a cat dog house river green small quick table window city old new red blue".split()


def family(name):
    return os.path.normpath(DEBERTA if name == "deberta" else os.path.join(FAMILIES, name))


def made_on_first_use(tmp_path_factory, folder, arguments):
    """`run(name)`: the folder that `kbc ARGUMENTS(name)... --run-dir` writes, made in this
    process on the first call for `name` (read it; copy it to change it). Its output is no
    test's, and the TensorFlow variables kbc sets stay in it."""
    runs = {}

    def run(name):
        if name not in runs:
            run_dir = tmp_path_factory.mktemp(name) / folder
            err = io.StringIO()
            with (mock.patch.dict(os.environ), contextlib.redirect_stdout(io.StringIO()),
                  contextlib.redirect_stderr(err)):
                code = main([str(arg) for arg in (*arguments(name), "--run-dir", run_dir)])
            assert code == 0, err.getvalue()[-3000:]
            runs[name] = run_dir
        return runs[name]

    return run


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def marked_reviews(tmp_path_factory):
    """128 texts of common words, positive when one of them is "good", negative when "bad":
    a word anywhere in the text decides, which a few epochs learn."""
    rng = random.Random(0)
    rows = []
    for _ in range(128):
        marker = rng.choice(["good", "bad"])
        words = rng.choices(WORDS, k=5)
        words.insert(rng.randint(0, 5), marker)
        rows.append(f"{' '.join(words)},{'positive' if marker == 'good' else 'negative'}")
    path = tmp_path_factory.mktemp("data") / "reviews.csv"
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def family_runs(marked_reviews, tmp_path_factory):
    """`run(name)`: a classifier fine-tuned from `name`'s checkpoint folder on
    `marked_reviews` (`made_on_first_use`)."""
    return made_on_first_use(tmp_path_factory, "run", lambda name: (
        "finetune", "--task", "classify", "--train", marked_reviews, "--checkpoint",
        family(name), "--seq-length", 16, "--batch-size", 8, "--epochs", 6,
        "--learning-rate", 3e-3))


@pytest.mark.parametrize("name", [
    pytest.param("roberta", marks=pytest.mark.slow),  # its BPE tokenizer traces slowly
    "albert", "distilbert", "deberta"])
def test_finetune_from_a_family_checkpoint_learns_then_evaluates_and_predicts(
        kbc, name, family_runs, marked_reviews, tmp_path):
    run_dir = family_runs(name)
    run = RunDirectory.open(run_dir)
    assert run.config()["model_config"]["family"] == name
    assert TOKENIZER_FILES[name] | {"tokenizer_config.json"} <= set(os.listdir(run_dir))
    # The checkpoint folder's casing (RoBERTa's BPE: always cased; DeBERTa-v3: cased).
    assert run.config()["task"]["lower_case"] is (name not in ("roberta", "deberta"))

    evaluated = kbc("evaluate", run_dir, marked_reviews)
    assert evaluated.code == 0, evaluated.err
    assert json.loads(evaluated.out)["accuracy"] >= 0.8  # chance: 0.5

    texts = tmp_path / "texts.txt"
    texts.write_text("the small good cat river\nold red bad house city\n")
    predicted = kbc("predict", run_dir, "--input", texts)
    assert predicted.code == 0, predicted.err
    answers = json_lines(predicted.out)
    assert [a["text"] for a in answers] == ["the small good cat river", "old red bad house city"]
    assert [a["label"] for a in answers] == ["positive", "negative"]
    if name != "distilbert":  # WordPiece exports as BERT's do (test_commands)
        _check_exports(kbc, name, run_dir, texts, answers, tmp_path)


def _check_exports(kbc, name, run_dir, texts, answers, tmp_path):
    """The SavedModel answers raw text as the run did; ALBERT's and DeBERTa's .tflite files
    too, while RoBERTa's takes ids (its BPE tokenizer has no TFLite ops)."""
    output = tmp_path / "export"
    exported = kbc("export", run_dir, "--output", output)
    assert exported.code == 0, exported.err
    served = [kbc("predict", output / model, "--input", texts)
              for model in ("saved_model", "model.tflite")]
    assert served[0].code == 0, served[0].err
    expected = [[a["probabilities"][label] for label in ("negative", "positive")]
                for a in answers]
    for answer, probabilities in zip(json_lines(served[0].out), expected, strict=True):
        assert answer["probabilities"] == pytest.approx(probabilities, abs=1e-4)
    if name == "roberta":
        assert "token_ids" in exported.err  # it says what the .tflite file takes
        assert served[1].code == 2 and "not text" in served[1].err
    else:
        assert served[1].code == 0, served[1].err
        on_device = json_lines(served[1].out)
        assert [a["label_name"] for a in on_device] == ["positive", "negative"]
        for answer, probabilities in zip(on_device, expected, strict=True):
            assert answer["probabilities"] == pytest.approx(probabilities, abs=1e-4)


@pytest.mark.parametrize("name", ["roberta", "albert", "distilbert", "deberta"])
def test_convert_copies_each_kind_of_vocabulary_beside_the_keras_file(kbc, name, tmp_path):
    output = tmp_path / "converted" / "encoder.keras"
    result = kbc("convert", family(name), output)
    assert result.code == 0, result.err
    for file in TOKENIZER_FILES[name] | {"tokenizer_config.json"}:
        assert (output.parent / file).read_bytes() == open(
            os.path.join(family(name), file), "rb").read()


def test_runs_saved_with_vocab_txt_alone_still_load(kbc, family_runs, tmp_path):
    """A run directory from before the family (vocab.txt, no tokenizer_config.json, `cased`
    false in its arguments) answers as before."""
    new, old = family_runs("distilbert"), tmp_path / "old"
    shutil.copytree(new, old)
    os.remove(old / "tokenizer_config.json")
    config = json.loads((old / "config.json").read_text())
    config["arguments"]["cased"] = False
    (old / "config.json").write_text(json.dumps(config))
    texts = tmp_path / "texts.txt"
    texts.write_text("The GOOD cat\nA bad Dog\n")
    answers = [kbc("predict", run, "--input", texts) for run in (new, old)]
    assert all(a.code == 0 for a in answers), answers[1].err
    assert answers[0].out == answers[1].out


@pytest.fixture(scope="module")
def tiny_sizes(tmp_path_factory):
    """Sizes over a family preset (`--preset X --config this`): a model that trains in
    seconds, with room for RoBERTa's position offset (and ALBERT's factorized embeddings
    narrower than the layers)."""
    folder = tmp_path_factory.mktemp("config")
    paths = {}
    for name in ("roberta", "albert", "distilbert"):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps({
            **TINY_CONFIG, "max_position_embeddings": 66,
            **({"embedding_size": 16} if name == "albert" else {})}))
    return paths


PRETRAINING = {
    "albert": (["--vocab", os.path.join(family("albert"), "spiece.model"),
                "--pair-task", "sentence_order", "--max-ngram", 3, "--whole-word-masking"],
               {"num_layer_groups": 1, "hidden_act": "gelu_approximate", "pooler": True}),
    "roberta": (["--vocab", family("roberta"), "--pair-task", "none"],
                {"position_offset": 2, "type_vocab_size": 1}),
    # No --pair-task: a new model pretrains with its family's (DistilBERT: masked LM only).
    "distilbert": (["--vocab", os.path.join(family("distilbert"), "vocab.txt")],
                   {"type_vocab_size": 0, "pooler": False}),
}
PAIR_TASKS = {"albert": "sentence_order", "roberta": "none", "distilbert": "none"}


@pytest.fixture(scope="module")
def family_pretraining(corpus, tiny_sizes, tmp_path_factory):
    """`run(name)`: a tiny model pretrained from `name`'s preset its way (`PRETRAINING`;
    `made_on_first_use`)."""
    return made_on_first_use(tmp_path_factory, "pretrain", lambda name: (
        "pretrain", corpus, *PRETRAINING[name][0], "--preset", f"{name}_base", "--config",
        tiny_sizes[name], "--seq-length", 32, "--batch-size", 4, "--epochs", 1,
        "--steps-per-epoch", 2))


@pytest.mark.parametrize("name", [
    "albert", pytest.param("roberta", marks=pytest.mark.slow), "distilbert"])
def test_pretrain_each_family_from_its_preset(name, family_pretraining):
    expected = PRETRAINING[name][1]
    run_dir = family_pretraining(name)
    run = RunDirectory.open(run_dir)
    config = run.config()["model_config"]
    assert config["family"] == name and config["hidden_size"] == TINY_CONFIG["hidden_size"]
    assert config["embedding_size"] == (16 if name == "albert" else None)
    assert {key: config[key] for key in expected} == expected  # the rest from the preset
    assert TOKENIZER_FILES[name] <= set(os.listdir(run_dir))
    assert run.config()["arguments"]["pair_task"] == PAIR_TASKS[name]
    metrics = run.read_json("metrics.json")
    assert ("nsp_accuracy" in metrics) is (name == "albert")  # ALBERT: sentence order


def test_pretrained_albert_run_finetunes_with_its_own_sentencepiece_model(
        kbc, family_pretraining, marked_reviews, tmp_path):
    """`--checkpoint RUN` finds the run's spiece.model; `--resume` finds it too."""
    pretrain_dir = tmp_path / "pretrain"
    shutil.copytree(family_pretraining("albert"), pretrain_dir)
    resumed = kbc("pretrain", "--resume", "--run-dir", pretrain_dir)
    assert resumed.code == 0, resumed.err
    finetuned = kbc("finetune", "--task", "classify", "--train", marked_reviews,
                    "--checkpoint", pretrain_dir, "--seq-length", 32, "--batch-size", 32,
                    "--epochs", 1, "--run-dir", tmp_path / "finetune")
    assert finetuned.code == 0, finetuned.err
    assert (tmp_path / "finetune" / "spiece.model").read_bytes() == (
        pretrain_dir / "spiece.model").read_bytes()


def test_a_vocabulary_of_another_kind_than_the_checkpoints_is_one_line(kbc, marked_reviews,
                                                                       tmp_path):
    vocab = os.path.join(family("distilbert"), "vocab.txt")
    result = kbc("finetune", "--task", "classify", "--train", marked_reviews,
                 "--checkpoint", family("roberta"), "--vocab", vocab,
                 "--run-dir", tmp_path / "run", cwd=tmp_path)
    assert_one_line_error(result, vocab, "wordpiece", "byte_pair", "leave out --vocab")
    assert not (tmp_path / "run").exists()


def test_a_pair_task_on_distilbert_is_one_line(kbc, corpus, tiny_sizes, tmp_path):
    result = kbc("pretrain", corpus, "--vocab", family("distilbert"),
                 "--preset", "distilbert_base", "--config", tiny_sizes["distilbert"],
                 "--pair-task", "sentence_order", "--run-dir", tmp_path / "run",
                 cwd=tmp_path)
    assert_one_line_error(result, "--pair-task sentence_order", "pooler", "distilbert",
                          "--pair-task none")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # BPE tokenizer traces slowly
def test_pretraining_pairs_of_roberta_are_packed_its_way(corpus):
    """`kbc pretrain --vocab vocab.json --pair-task next_sentence`'s rows: `<s> A </s></s> B
    </s>` with one token type, as RoBERTa packs pairs."""
    from keras_bert_core.pretraining.data import pretraining_dataset
    from keras_bert_core.text import BertPreprocessor

    tokenizer = BertPreprocessor(family("roberta")).tokenizer
    x, y, _ = next(iter(pretraining_dataset(str(corpus), tokenizer, seq_length=32,
                                            max_predictions_per_seq=4, batch_size=8, seed=0)))
    assert y["nsp"].shape == (8,)
    assert (x["segment_ids"].numpy() == 0).all()
    for ids, mask in zip(x["token_ids"].numpy(), x["padding_mask"].numpy(), strict=True):
        ids = ids[mask == 1].tolist()
        assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
        # <s>, </s></s> between the segments and </s> at the end (specials are never masked).
        assert ids.count(tokenizer.sep_id) == 3
        first_sep = ids.index(tokenizer.sep_id)
        assert ids[first_sep + 1] == tokenizer.sep_id
