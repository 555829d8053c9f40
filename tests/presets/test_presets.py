"""Presets: `save_to_preset` and `from_preset` round trips for every head, every checkpoint
format and kbc run directory loading through `from_preset` with its vocabulary and casing,
and each way a folder can be wrong named in one error."""

import argparse
import json
import os
import shutil
import zipfile

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.errors import CheckpointError
from keras_bert_core.presets import FORMAT_VERSION, read_preset

FAMILIES = os.path.join(os.path.dirname(__file__), "..", "checkpoints", "data", "families")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "good", "bad", "film", "plot",
         "was", "hello", "Hello", "world", ".", ","]
CONFIG = kbc.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_layers=1, num_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
TEXTS = ["the film was good.", "Hello, the plot was bad"]


def _outputs(model, inputs):
    out = model.predict(inputs, verbose=0)
    return out if isinstance(out, dict) else {"logits": out}


def _assert_same(model, loaded, inputs, names=None):
    expected, actual = _outputs(model, inputs), _outputs(loaded, inputs)
    assert expected.keys() == actual.keys()
    for name in names or expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-6)


def _run_card_example(folder):
    """Runs the Python example of the folder's model card, as it stands."""
    card = (folder / "README.md").read_text()
    example = card.split("```python\n")[1].split("```")[0]
    exec(example.replace("path/to/this/folder", str(folder)), {})  # noqa: S102


def _hf_folder(tmp_path, family, do_lower_case):
    """A copy of a Hugging Face fixture whose tokenizer_config.json says `do_lower_case`;
    WordPiece fixtures get "Hello" and "hello" as their last two tokens."""
    folder = tmp_path / f"{family}-{do_lower_case}"
    shutil.copytree(os.path.join(FAMILIES, family), folder)
    if (folder / "vocab.txt").exists():
        tokens = (folder / "vocab.txt").read_text().splitlines()
        (folder / "vocab.txt").write_text("\n".join(tokens[:-2] + ["Hello", "hello"]) + "\n")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**config, "do_lower_case": do_lower_case}))
    return folder


@pytest.fixture(scope="module")
def trained_classifier():
    """A classifier after one training step: its optimizer holds state."""
    model = kbc.BertClassifier(kbc.BertEncoder(CONFIG), num_classes=3)
    preprocessor = kbc.BertPreprocessor(VOCAB, seq_length=16, lower_case=False)
    model.fit(preprocessor(TEXTS), np.array([2, 0]), epochs=1, verbose=0)
    return model, preprocessor


def test_classifier_preset_loads_with_its_labels_casing_length_and_card(trained_classifier,
                                                                        tmp_path):
    model, preprocessor = trained_classifier
    folder = tmp_path / "reviews"
    kbc.save_to_preset(model, preprocessor, folder, label_names=["bad", "neutral", "good"],
                       metrics={"validation": {"accuracy": 0.875}},
                       training={"epochs": 3, "train": "reviews.csv"})
    assert sorted(os.listdir(folder)) == ["README.md", "config.json", "model.keras",
                                          "preset.json", "tokenizer_config.json", "vocab.txt"]
    loaded, loaded_preprocessor = kbc.from_preset(folder)
    assert type(loaded) is kbc.BertClassifier
    assert (loaded_preprocessor.seq_length, loaded_preprocessor.lower_case) == (16, False)
    assert loaded_preprocessor.vocabulary == VOCAB
    _assert_same(model, loaded, preprocessor(TEXTS))
    # It carries the preprocessor: raw text in.
    assert loaded.preprocessor is loaded_preprocessor
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0),
                               model.predict(preprocessor(TEXTS), verbose=0), atol=1e-5)
    metadata = read_preset(folder)
    assert metadata["label_names"] == ["bad", "neutral", "good"]
    assert metadata["task"] == {"name": "classify", "seq_length": 16, "lower_case": False,
                                "label_names": ["bad", "neutral", "good"]}
    assert (metadata["model_class"], metadata["family"], metadata["tokenizer"]) == (
        "BertClassifier", "bert", "wordpiece")
    # The optimizer's state (two more copies of the weights) is left out, and so is the
    # preprocessor (the folder's files are its vocabulary).
    model.save(tmp_path / "with_optimizer.keras")
    assert (folder / "model.keras").stat().st_size < 0.6 * (
        tmp_path / "with_optimizer.keras").stat().st_size
    with zipfile.ZipFile(folder / "model.keras") as archive:
        assert "preprocessor" not in json.loads(archive.read("config.json"))["config"]
    # The config beside it reads as the encoder's.
    assert kbc.BertConfig.from_json(folder / "config.json") == CONFIG
    card = (folder / "README.md").read_text()
    for expected in ("BertClassifier", "`bad`, `neutral`, `good`", "| validation accuracy | "
                     "0.875 |", "| epochs | 3 |", "| training data | reviews.csv |", "cased"):
        assert expected in card
    _run_card_example(folder)


def test_a_lora_model_is_saved_merged(tmp_path):
    preprocessor = kbc.BertPreprocessor(VOCAB, seq_length=16)
    model = kbc.BertClassifier(kbc.BertEncoder(CONFIG), num_classes=2, preprocessor=preprocessor)
    kbc.enable_lora(model, rank=2)
    model.fit(TEXTS, np.array([1, 0]), epochs=1, verbose=0)
    rng = np.random.default_rng(0)
    for weight in model.weights:  # adapters that change the outputs well beyond rounding
        if "lora_kernel_b" in weight.path:
            weight.assign(rng.normal(scale=0.5, size=weight.shape))
    kbc.save_to_preset(model, None, tmp_path / "lora")
    loaded, _ = kbc.from_preset(tmp_path / "lora")
    assert not any("lora" in weight.path for weight in loaded.weights)
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0),
                               model.predict(TEXTS, verbose=0), atol=1e-5)
    assert model.preprocessor is preprocessor  # the model saved is left as it was


def test_load_checkpoint_and_load_pretrainer_read_a_preset_as_its_model_keras(
        trained_classifier, tmp_path):
    model, preprocessor = trained_classifier
    kbc.save_to_preset(model, preprocessor, tmp_path / "preset")
    assert kbc.checkpoints.detect_format(tmp_path / "preset") == "keras"
    encoder, config = kbc.load_checkpoint(tmp_path / "preset")
    assert config == CONFIG
    _assert_same(model.encoder, encoder, preprocessor(TEXTS))
    # A classifier's preset has no pretraining heads: fresh ones, as for other encoders.
    with pytest.warns(UserWarning, match="no pretrained weights for .*mlm"):
        pretrainer, _ = kbc.load_pretrainer(tmp_path / "preset")
    _assert_same(model.encoder, pretrainer.encoder, preprocessor(TEXTS))


@pytest.mark.parametrize("head", ["span", "tagger", "choice", "encoder", "pretrainer"])
def test_every_model_kind_round_trips(head, tmp_path):
    encoder = kbc.BertEncoder(CONFIG)
    preprocessor = kbc.BertPreprocessor(VOCAB, seq_length=16)
    inputs = preprocessor(TEXTS)
    model, expected_class, label_names = {
        "span": (kbc.BertSpanLabeler(encoder), kbc.BertSpanLabeler, None),
        "tagger": (kbc.BertTokenClassifier(encoder, num_classes=3), kbc.BertTokenClassifier,
                   ["O", "B-PER", "I-PER"]),
        "choice": (kbc.BertMultipleChoice(encoder, num_choices=2), kbc.BertMultipleChoice,
                   None),
        "encoder": (encoder, kbc.BertEncoder, None),
        "pretrainer": (kbc.BertPretrainer(encoder), kbc.BertEncoder, None),  # saved as its encoder
    }[head]
    if head == "choice":
        inputs = {name: np.stack([value, value], axis=1) for name, value in inputs.items()}
    kbc.save_to_preset(model, preprocessor, tmp_path / head, label_names=label_names)
    loaded, _ = kbc.from_preset(tmp_path / head)
    assert type(loaded) is expected_class
    _assert_same(encoder if head == "pretrainer" else model, loaded, inputs)
    _run_card_example(tmp_path / head)
    task = read_preset(tmp_path / head)["task"]
    if head in ("encoder", "pretrainer"):
        assert task is None
    else:
        assert task["name"] == {"span": "squad", "tagger": "ner", "choice": "choice"}[head]
        assert task.get("label_names") == label_names
        assert task.get("num_choices") == (2 if head == "choice" else None)


def test_a_cased_hugging_face_checkpoint_is_tokenized_cased_without_flags(tmp_path):
    cased, uncased = (_hf_folder(tmp_path, "distilbert", flag) for flag in (False, True))
    hello = (cased / "vocab.txt").read_text().splitlines().index("Hello")
    for folder, lower_case, first_id in ((cased, False, hello), (uncased, True, hello + 1)):
        encoder, preprocessor = kbc.from_preset(folder)
        assert preprocessor.lower_case is lower_case
        assert preprocessor(["Hello"])["token_ids"][0, 1] == first_id
        # Also the preprocessor alone, and a preset saved from it.
        assert kbc.BertPreprocessor(str(folder)).lower_case is lower_case
        kbc.save_to_preset(encoder, preprocessor, tmp_path / f"preset-{lower_case}")
        assert kbc.from_preset(tmp_path / f"preset-{lower_case}")[1].lower_case is lower_case
    # An explicit choice wins over the files.
    assert kbc.from_preset(cased, lower_case=True)[1].lower_case is True


@pytest.mark.filterwarnings("ignore:.*no pooler weights")  # RoBERTa's masked-LM checkpoint
@pytest.mark.parametrize("family, kind, lower_case", [
    ("distilbert", "wordpiece", True), ("roberta", "byte_pair", False),
    ("albert", "sentencepiece", True)])
def test_hugging_face_checkpoints_of_each_family_load_with_their_tokenizer(family, kind,
                                                                           lower_case):
    folder = os.path.join(FAMILIES, family)
    encoder, preprocessor = kbc.from_preset(folder)
    assert (preprocessor.tokenizer_kind, preprocessor.lower_case) == (kind, lower_case)
    assert preprocessor.seq_length == 64  # tokenizer_config.json's model_max_length
    expected, _ = kbc.load_checkpoint(folder)
    # RoBERTa's masked-LM checkpoint has no pooler: each load draws a fresh one.
    _assert_same(expected, encoder, preprocessor(TEXTS), names=["sequence_output"])


def test_google_research_and_keras_files_load_with_the_vocabulary_beside_them(tmp_path):
    from keras_bert_core.checkpoints import save_google_research_checkpoint

    encoder = kbc.BertEncoder(CONFIG)
    google = tmp_path / "google"
    save_google_research_checkpoint(encoder, str(google))
    (google / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    loaded, preprocessor = kbc.from_preset(google, seq_length=24)
    assert (type(loaded), preprocessor.seq_length, preprocessor.lower_case) == (
        kbc.BertEncoder, 24, True)  # nothing says the casing: uncased, as BERT's default
    _assert_same(encoder, loaded, preprocessor(TEXTS))

    classifier = kbc.BertClassifier(encoder, num_classes=2)
    keras_dir = tmp_path / "keras"
    keras_dir.mkdir()
    classifier.save(keras_dir / "classifier.keras")
    (keras_dir / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    loaded, preprocessor = kbc.from_preset(keras_dir / "classifier.keras")
    assert type(loaded) is kbc.BertClassifier
    assert preprocessor.seq_length == CONFIG.max_position_embeddings  # the whole table
    _assert_same(classifier, loaded, preprocessor(TEXTS))

    # A .keras file that carries its preprocessor needs no vocabulary beside it.
    classifier.preprocessor = kbc.BertPreprocessor(VOCAB, seq_length=20, lower_case=False)
    classifier.save(tmp_path / "alone.keras")
    loaded, preprocessor = kbc.from_preset(tmp_path / "alone.keras")
    assert (preprocessor.seq_length, preprocessor.lower_case) == (20, False)
    assert preprocessor.vocabulary == VOCAB and loaded.preprocessor is preprocessor


def test_keras_hub_presets_load_with_their_tokenizers_casing(tmp_path):
    keras_hub = pytest.importorskip("keras_hub", reason="keras-hub is not installed")
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=32)
    backbone.save_to_preset(str(tmp_path))
    with pytest.raises(CheckpointError, match="without its tokenizer"):
        kbc.from_preset(tmp_path)
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=False).save_to_preset(
        str(tmp_path))
    encoder, preprocessor = kbc.from_preset(tmp_path)
    assert preprocessor.lower_case is False and preprocessor.vocabulary == VOCAB
    assert preprocessor(["Hello"])["token_ids"][0, 1] == VOCAB.index("Hello")
    expected, _ = kbc.load_checkpoint(tmp_path)
    _assert_same(expected, encoder, preprocessor(TEXTS))


def test_model_garden_checkpoints_load_with_the_vocabulary_beside_them(tmp_path):
    networks = pytest.importorskip("official.nlp.modeling.networks",
                                   reason="tf-models-official (Model Garden) is not installed")
    import tensorflow as tf

    theirs = networks.BertEncoder(vocab_size=len(VOCAB), hidden_size=32, num_layers=1,
                                  num_attention_heads=2, inner_dim=64, max_sequence_length=32,
                                  dict_outputs=True)
    ids = np.ones((1, 4), np.int32)
    theirs({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids * 0})
    tf.train.Checkpoint(encoder=theirs).save(str(tmp_path / "ckpt"))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    encoder, preprocessor = kbc.from_preset(tmp_path)
    assert type(encoder) is kbc.BertEncoder and preprocessor.vocabulary == VOCAB
    expected, _ = kbc.load_checkpoint(tmp_path)
    _assert_same(expected, encoder, preprocessor(TEXTS))


def _run(path, command, model=None, task=None, arguments=None, tokenizer_config=True):
    """A run directory as `kbc <command>` writes it."""
    from keras_bert_core.cli.run_dir import RunDirectory

    run = RunDirectory.create(str(path))
    run.write_config(argparse.Namespace(command=command, **(arguments or {})), CONFIG, task)
    if tokenizer_config:
        run.write_tokenizer(kbc.BertTokenizer(VOCAB, lower_case=False))
    else:
        run.write_vocab(VOCAB)
    if model is not None:
        run.save_model(model)
    return path


def test_kbc_runs_load_with_their_task_length_and_casing(tmp_path):
    classifier = kbc.BertClassifier(kbc.BertEncoder(CONFIG), num_classes=2)
    task = {"name": "classify", "seq_length": 24, "lower_case": False,
            "label_names": ["no", "yes"]}
    finetuned = _run(tmp_path / "finetune", "finetune", classifier, task)
    for path in (finetuned, finetuned / "model.keras"):
        loaded, preprocessor = kbc.from_preset(path)
        assert type(loaded) is kbc.BertClassifier
        assert (preprocessor.seq_length, preprocessor.lower_case) == (24, False)
        _assert_same(classifier, loaded, preprocessor(TEXTS))
    # A pretraining run's pretrainer comes back as its encoder; a run saved before
    # tokenizer_config.json has its casing in its arguments.
    pretrainer = kbc.BertPretrainer(kbc.BertEncoder(CONFIG))
    pretrained = _run(tmp_path / "pretrain", "pretrain", pretrainer,
                      arguments={"seq_length": 16, "cased": True}, tokenizer_config=False)
    encoder, preprocessor = kbc.from_preset(pretrained)
    assert type(encoder) is kbc.BertEncoder
    assert (preprocessor.seq_length, preprocessor.lower_case) == (16, False)
    _assert_same(pretrainer.encoder, encoder, preprocessor(TEXTS))

    unfinished = _run(tmp_path / "unfinished", "finetune", task=task)
    with pytest.raises(CheckpointError, match="has not finished.*no model.keras"):
        kbc.from_preset(unfinished)


def test_saving_never_replaces_a_folder_unless_asked(trained_classifier, tmp_path):
    model, preprocessor = trained_classifier
    folder = tmp_path / "preset"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        kbc.save_to_preset(model, preprocessor, folder)
    assert os.listdir(folder) == ["notes.txt"]
    model.preprocessor = preprocessor  # saved when none is given
    try:
        kbc.save_to_preset(model, None, folder, overwrite=True)
    finally:
        model.preprocessor = None
    assert "notes.txt" not in os.listdir(folder) and (folder / "preset.json").is_file()
    assert kbc.from_preset(folder)[1].lower_case is False
    # Nothing is left beside it.
    assert os.listdir(tmp_path) == ["preset"]


def test_what_does_not_fit_the_model_is_refused_before_writing(trained_classifier, tmp_path):
    model, preprocessor = trained_classifier
    with pytest.raises(ValueError, match="needs the BertClassifier's preprocessor"):
        kbc.save_to_preset(model, None, tmp_path / "a")
    with pytest.raises(ValueError, match="2 label names for a BertClassifier of 3 classes"):
        kbc.save_to_preset(model, preprocessor, tmp_path / "a", label_names=["no", "yes"])
    bigger = kbc.BertPreprocessor(VOCAB + ["extra"], seq_length=16)
    with pytest.raises(ValueError, match="17 tokens but .* only 16 rows"):
        kbc.save_to_preset(model, bigger, tmp_path / "b")
    longer = kbc.BertPreprocessor(VOCAB, seq_length=64)
    with pytest.raises(ValueError, match="seq_length 64 exceeds .* 32"):
        kbc.save_to_preset(model, longer, tmp_path / "c")
    assert not os.listdir(tmp_path)


def test_folders_that_are_not_presets_name_what_is_missing(trained_classifier, tmp_path):
    model, preprocessor = trained_classifier
    with pytest.raises(CheckpointError, match="no such file or folder"):
        kbc.from_preset(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="not a preset \\(no preset.json\\), not a kbc "
                                              "run .* looked for a .keras file"):
        kbc.from_preset(empty)

    preset = tmp_path / "preset"
    kbc.save_to_preset(model, preprocessor, preset)
    broken = tmp_path / "broken"
    shutil.copytree(preset, broken)
    os.remove(broken / "model.keras")
    os.remove(broken / "vocab.txt")
    with pytest.raises(CheckpointError, match="incomplete preset: it lacks model.keras, "
                                              "vocab.txt$"):
        kbc.from_preset(broken)
    metadata = json.loads((preset / "preset.json").read_text())
    (broken / "preset.json").write_text(json.dumps(
        {**metadata, "format_version": FORMAT_VERSION + 1}))
    with pytest.raises(CheckpointError, match="upgrade keras_bert_core"):
        kbc.from_preset(broken)
    (broken / "preset.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="preset.json: not valid JSON"):
        kbc.from_preset(broken)
    with pytest.raises(CheckpointError, match="seq_length 64 exceeds"):
        kbc.from_preset(preset, seq_length=64)

    # tokenizer.json alone (transformers 5 saves no vocab.txt): its vocabulary is read,
    # unless it asks for a tokenization the package does not reproduce.
    json_only = tmp_path / "json_only"
    shutil.copytree(os.path.join(FAMILIES, "distilbert"), json_only)
    os.remove(json_only / "vocab.txt")
    _, preprocessor = kbc.from_preset(json_only)
    _, with_vocab_txt = kbc.from_preset(os.path.join(FAMILIES, "distilbert"))
    assert preprocessor.vocabulary == with_vocab_txt.vocabulary
    assert preprocessor.lower_case == with_vocab_txt.lower_case
    spec = json.loads((json_only / "tokenizer.json").read_text())
    (json_only / "tokenizer.json").write_text(json.dumps(
        {**spec, "pre_tokenizer": {"type": "Whitespace"}}))
    with pytest.raises(CheckpointError, match="json_only.tokenizer.json: pre_tokenizer "
                                              '"Whitespace" with a WordPiece model'):
        kbc.from_preset(json_only)


def test_trained_seq_length_is_a_task_models_own(tmp_path):
    from keras_bert_core.presets import FORMAT, trained_seq_length

    folders = {
        "preset": ("preset.json", {"format": FORMAT, "format_version": FORMAT_VERSION,
                                   "model_class": "BertClassifier", "seq_length": 48,
                                   "lower_case": True}),
        "finetune": ("config.json", {"command": "finetune", "task": {"seq_length": 64},
                                     "arguments": {"seq_length": 64}}),
        "pretrain": ("config.json", {"command": "pretrain", "arguments": {"seq_length": 512}}),
        "hugging_face": ("config.json", {"model_type": "bert", "hidden_size": 384}),
    }
    for name, (file, contents) in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(json.dumps(contents))
    assert {name: trained_seq_length(tmp_path / name) for name in folders} == {
        "preset": 48, "finetune": 64, "pretrain": None, "hugging_face": None}
