"""Hugging Face XLM-RoBERTa: parity with PyTorch and with `XLMRobertaTokenizerFast`.

The fixture is a small random XLMRobertaForMaskedLM saved by `transformers`, with a
SentencePiece model trained on multilingual text, PyTorch's outputs and HF's ids, written by
make_xlm_roberta_fixtures.py (beside this file).
"""

import json
import os
import shutil
import warnings

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint, load_pretrainer
from keras_bert_core.checkpoints.huggingface_writer import (
    huggingface_config,
    save_huggingface_checkpoint,
)
from tests.checkpoints.parity import encoder_inputs, max_diff
from tests.models.test_families import PUBLISHED_PARAMETERS

DATA = os.path.join(os.path.dirname(__file__), "data", "xlm_roberta")
XLM_ROBERTA = os.path.join(DATA, "mlm")
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def reference():
    return np.load(os.path.join(XLM_ROBERTA, "reference.npz"))


@pytest.fixture(scope="module")
def pretrainer():
    with warnings.catch_warnings():  # a masked-LM checkpoint has no pooler
        warnings.simplefilter("ignore")
        return load_pretrainer(XLM_ROBERTA)


def test_encoder_and_masked_lm_head_match_pytorch(pretrainer, reference):
    pretrainer, config = pretrainer
    assert (config.family, config.position_offset, config.type_vocab_size) == (
        "xlm-roberta", 2, 1)
    assert pretrainer.next_sentence is None
    inputs = encoder_inputs(reference["input_ids"], reference["attention_mask"])
    sequence = np.asarray(pretrainer.encoder(inputs)["sequence_output"])
    real = inputs["padding_mask"].astype(bool)
    assert max_diff(sequence[real], reference["sequence_output"]) <= TOLERANCE
    rows, columns = reference["mlm_positions"].T
    logits = pretrainer.masked_lm(sequence[rows, columns][None])[0]
    assert max_diff(logits, reference["mlm_logits"]) <= TOLERANCE


def test_classifier_head_matches_pytorch(pretrainer, reference):
    encoder = pretrainer[0].encoder
    model = kbc.BertClassifier(encoder, num_classes=3)
    for layer, key in ((model.head.hidden, "dense"), (model.head.dense, "out_proj")):
        layer.kernel.assign(reference[f"classifier_{key}_weight"].T)
        layer.bias.assign(reference[f"classifier_{key}_bias"])
    logits = model.predict(encoder_inputs(reference["input_ids"], reference["attention_mask"]),
                           verbose=0)
    assert max_diff(logits, reference["logits"]) <= TOLERANCE


def _hf_ids():
    stored = np.load(os.path.join(DATA, "tokenizer_ids.npz"))
    ids = np.split(stored["ids"], np.cumsum(stored["lengths"])[:-1])
    return [str(t) for t in stored["texts"]], [row.tolist() for row in ids], set(
        stored["ties"].tolist())


@pytest.mark.parametrize("tflite_compatible", [False, True])
def test_the_tokenizer_gives_hf_ids_on_multilingual_text(tflite_compatible):
    texts, ids, ties = _hf_ids()
    assert len(texts) > 250 and len(ties) < len(texts) // 20
    preprocessor = kbc.BertPreprocessor(XLM_ROBERTA, seq_length=512, static_shape=False,
                                        tflite_compatible=tflite_compatible)
    assert preprocessor.tokenizer_kind == "fairseq_sentencepiece"
    assert (preprocessor.cls_id, preprocessor.pad_id, preprocessor.sep_id,
            preprocessor.unk_id, preprocessor.mask_id) == (0, 1, 2, 3, 801)
    packed = preprocessor(texts)
    rows = [row[mask > 0].tolist() for row, mask in zip(
        packed["token_ids"].numpy(), packed["padding_mask"].numpy(), strict=True)]
    wrong = [text for i, (text, row, theirs) in enumerate(zip(texts, rows, ids, strict=True))
             if row != theirs and i not in ties]
    assert not wrong, wrong[:3]
    assert sum(3 in row for row in ids) > 0  # unknown characters among them


def test_both_pipelines_place_the_pieces_alike():
    # The TFLite pipeline's offsets (span QA and tagging in a .tflite file) replay the
    # model's normalizer on raw text; the default pipeline's come from tf.text's op.
    texts = _hf_ids()[0][::3]
    default = kbc.XlmRobertaTokenizer(os.path.join(XLM_ROBERTA, "sentencepiece.bpe.model"))
    tflite = kbc.XlmRobertaTokenizer(default.model, tflite_compatible=True)
    expected = [x.to_list() for x in default.tokenize_with_offsets(texts)]
    assert [x.to_list() for x in tflite.tokenize_with_offsets(texts)] == expected
    # In order, inside the text (a character the normalizer expands, e.g. "½", is the first
    # of its pieces' span: the others are empty).
    _, starts, ends = expected
    for text, begins, finishes in zip(texts, starts, ends, strict=True):
        assert all(0 <= b <= e <= len(text.encode()) for b, e in zip(begins, finishes,
                                                                       strict=True))
        assert finishes == sorted(finishes)


def test_a_folder_with_tokenizer_json_alone_gives_the_same_ids(tmp_path):
    # As transformers 5 saves XLM-R: tokenizer.json, no sentencepiece.bpe.model.
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(XLM_ROBERTA, name), tmp_path / name)
    texts, ids, ties = _hf_ids()
    preprocessor = kbc.BertPreprocessor(tmp_path, seq_length=512, static_shape=False)
    assert isinstance(preprocessor.tokenizer, kbc.XlmRobertaTokenizer)
    packed = preprocessor(texts)
    rows = [row[mask > 0].tolist() for row, mask in zip(
        packed["token_ids"].numpy(), packed["padding_mask"].numpy(), strict=True)]
    assert [row for i, row in enumerate(rows) if i not in ties] == [
        row for i, row in enumerate(ids) if i not in ties]


def test_pairs_are_packed_as_hf_packs_them(reference):
    preprocessor = kbc.BertPreprocessor(XLM_ROBERTA, seq_length=64, static_shape=False)
    texts_a, texts_b = ([str(t) for t in reference[key]] for key in ("texts_a", "texts_b"))
    # HF reads "<mask>" in text as the mask token; the package never makes special tokens
    # from text, so those rows are left out.
    rows = [i for i, b in enumerate(texts_b) if b and "<mask>" not in texts_a[i] + b]
    assert len(rows) >= 2
    packed = preprocessor(([texts_a[i] for i in rows], [texts_b[i] for i in rows]))
    for row, i in enumerate(rows):
        length = int(reference["attention_mask"][i].sum())
        assert packed["token_ids"].numpy()[row, :length].tolist() == (
            reference["input_ids"][i, :length].tolist())
        assert not packed["segment_ids"].numpy()[row].any()


def test_presets_are_the_published_configurations_transformers_counts():
    with open(os.path.join(DATA, "param_counts.json"), encoding="utf-8") as f:
        published = json.load(f)
    assert published["xlm_roberta_base"]["num_parameters"] == 278_043_648
    for name, entry in published.items():
        ours = kbc.BertConfig.preset(name)
        theirs = kbc.BertConfig.from_dict(entry["config"])
        assert ours == theirs, name
        # RoBERTa's architecture (whose presets tests/models/test_families.py builds and
        # counts) with 250,002 embedding rows: counted without building 0.3-0.6 B weights.
        roberta = PUBLISHED_PARAMETERS[name.replace("xlm_", "")]
        extra_rows = ours.vocab_size - kbc.BertConfig.preset(name.replace("xlm_", "")).vocab_size
        assert roberta + extra_rows * ours.hidden_size == entry["num_parameters"], name


def test_a_written_checkpoint_reads_back_as_xlm_roberta(pretrainer, tmp_path):
    encoder = pretrainer[0].encoder
    packer = kbc.BertPreprocessor(XLM_ROBERTA).packer
    values = huggingface_config(encoder.config, packer)
    assert (values["model_type"], values["architectures"]) == ("xlm-roberta",
                                                               ["XLMRobertaModel"])
    assert (values["pad_token_id"], values["bos_token_id"], values["eos_token_id"]) == (1, 0, 2)
    save_huggingface_checkpoint(encoder, str(tmp_path), packer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded, config = load_checkpoint(tmp_path)
    assert config == encoder.config
    ids = {"token_ids": np.array([[0, 5, 6, 2]], "int32"),
           "segment_ids": np.zeros((1, 4), "int32"), "padding_mask": np.ones((1, 4), "int32")}
    assert max_diff(loaded(ids)["sequence_output"], encoder(ids)["sequence_output"]) == 0
