"""A tokenizer.json laid out as the ModernBERT hub's (NFC normalizer, non-special added
tokens found in text, special tokens past model.vocab): Hugging Face's ids, in the graph,
and whole folders that load (fixture from make_modernbert_hub_tokenizer.py)."""

import json
import os
import shutil

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.export import export_tflite
from keras_bert_core.text.vocabulary.files import write_vocabulary_files

DATA = os.path.join(os.path.dirname(__file__), "data", "modernbert")
HUB = os.path.join(DATA, "hub_tokenizer")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(HUB, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def hub_folder(tmp_path_factory):
    """The hub-layout tokenizer beside the mlm fixture's weights (same 512-row vocabulary)."""
    folder = tmp_path_factory.mktemp("modernbert_hub")
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        shutil.copy(os.path.join(HUB, name), folder / name)
    shutil.copy(os.path.join(DATA, "mlm", "model.safetensors"), folder / "model.safetensors")
    return folder


def real_ids(features):
    ids, mask = np.asarray(features["token_ids"]), np.asarray(features["padding_mask"])
    return [row[m.astype(bool)].tolist() for row, m in zip(ids, mask, strict=True)]


def test_preprocessor_gives_hugging_face_ids(reference):
    preprocessor = kbc.BertPreprocessor(HUB, seq_length=128, static_shape=False)
    tokenizer = preprocessor.tokenizer
    assert tokenizer.normalization == "NFC" and "  " in tokenizer.added_tokens
    special = reference["special_ids"]
    assert (preprocessor.cls_id, preprocessor.sep_id, preprocessor.pad_id,
            preprocessor.mask_id) == (special["[CLS]"], special["[SEP]"], special["[PAD]"],
                                      special["[MASK]"])
    assert real_ids(preprocessor(reference["texts"])) == reference["input_ids"]
    a, b = zip(*reference["pairs"], strict=True)
    assert real_ids(preprocessor((list(a), list(b)))) == reference["pair_input_ids"]
    # Spelled in text, special tokens are text (HF's default finds them).
    spelled = real_ids(preprocessor(reference["matched_special_texts"]))
    assert all(ours != theirs for ours, theirs in zip(
        spelled, reference["matched_special_ids"], strict=True))


def test_offsets_are_bytes_of_the_text_before_normalization():
    tokenizer = kbc.BertPreprocessor(HUB, seq_length=16).tokenizer
    text = "Cafe\u0301  x"  # 'é' decomposed: 3 bytes in, 2 after NFC
    ids, starts, ends = (t.to_list()[0] for t in tokenizer.tokenize_with_offsets([text, ""]))
    assert ids[-2] == tokenizer.token_to_id("  ") and (starts[-2], ends[-2]) == (6, 8)
    assert (starts[-1], ends[-1]) == (8, 9)  # 'x', the input's last byte
    assert ids == tokenizer([text.replace("e\u0301", "\u00e9")]).to_list()[0]


def test_vocabulary_files_and_config_keep_normalization_and_added_tokens(reference, tmp_path):
    preprocessor = kbc.BertPreprocessor(HUB, seq_length=128, static_shape=False)
    write_vocabulary_files(preprocessor.tokenizer, tmp_path)
    texts = reference["texts"][:12]
    for rebuilt in (kbc.BertPreprocessor(tmp_path, seq_length=128, static_shape=False),
                    kbc.BertPreprocessor.from_config(preprocessor.get_config())):
        assert real_ids(rebuilt(texts)) == reference["input_ids"][:12]


def test_hub_layout_folder_loads_end_to_end(reference, hub_folder, tmp_path):
    encoder, preprocessor = kbc.from_preset(str(hub_folder))
    texts = reference["texts"][:4]
    assert real_ids(preprocessor(texts)) == reference["input_ids"][:4]
    # A task model carries the preprocessor through a .keras file (vocabulary as assets,
    # normalization and added tokens in the config).
    model = kbc.BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)
    model.save(tmp_path / "model.keras")
    restored = keras.saving.load_model(tmp_path / "model.keras")
    assert restored.preprocessor.tokenizer.added_tokens == preprocessor.tokenizer.added_tokens
    features = restored.preprocessor(texts)
    assert real_ids(features) == reference["input_ids"][:4]
    np.testing.assert_allclose(restored(features), model(features), atol=1e-6)
    with pytest.raises(ValueError, match="NormalizeUTF8.*inputs='ids'"):
        export_tflite(model, preprocessor, str(tmp_path / "model.tflite"))


@pytest.mark.parametrize("change, message", [
    (lambda spec: spec.update(normalizer={"type": "NFKC"}), 'normalizer "NFKC"'),
    (lambda spec: spec["added_tokens"][2].update(lstrip=True), "has lstrip true"),
    (lambda spec: spec["added_tokens"][2].update(normalized=False), "normalized false"),
    (lambda spec: spec["added_tokens"][-1].update(id=5), "has id 5, which model.vocab"),
])
def test_settings_it_does_not_reproduce_are_refused_in_one_line(tmp_path, change, message):
    with open(os.path.join(HUB, "tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    change(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        kbc.BertPreprocessor(str(path), seq_length=8)
    assert "\n" not in str(error.value) and str(path) in str(error.value)
