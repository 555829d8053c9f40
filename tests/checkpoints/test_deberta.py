"""Hugging Face DeBERTa-v3 checkpoints and tokenizer: parity with PyTorch transformers
(fixtures written by make_deberta_fixtures.py beside this file)."""

import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint, load_pretrainer
from keras_bert_core.errors import CheckpointError
from keras_bert_core.layers.relative_positions import log_bucket_positions
from tests.checkpoints.parity import encoder_inputs, max_diff, read_reference

DATA = os.path.join(os.path.dirname(__file__), "data", "deberta")
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def mlm_encoder():
    return load_checkpoint(os.path.join(DATA, "mlm"))


def test_config_reads_deberta_v3_settings(mlm_encoder):
    _, config = mlm_encoder
    assert (config.family, config.position_embedding, config.type_vocab_size) == (
        "deberta", "relative", 0)
    assert (config.position_buckets, config.max_relative_positions) == (16, 64)
    assert (config.pooler, config.classifier_activation, config.layer_norm_eps) == (
        False, "gelu", 1e-7)
    # The classifier's file leaves max_relative_positions at -1: the absolute table's 512.
    classifier = kbc.BertConfig.from_json(os.path.join(DATA, "classifier", "config.json"))
    assert (classifier.position_buckets, classifier.max_relative_positions) == (256, 512)


def test_log_buckets_equal_transformers():
    reference = np.load(os.path.join(DATA, "buckets.npz"))
    np.testing.assert_array_equal(log_bucket_positions(reference["relative"], 256, 512),
                                  reference["buckets"])


@pytest.mark.parametrize("name", ["mlm", "classifier"])
def test_encoder_matches_pytorch_on_texts_and_pairs(name, mlm_encoder):
    encoder = mlm_encoder[0] if name == "mlm" else load_checkpoint(os.path.join(DATA, name))[0]
    reference = read_reference(DATA, name)
    outputs = encoder(encoder_inputs(reference["input_ids"], reference["attention_mask"]))
    assert set(outputs) == {"sequence_output"}
    real = reference["attention_mask"].astype(bool)
    assert max_diff(np.asarray(outputs["sequence_output"])[real],
                     reference["sequence_output"]) <= TOLERANCE


def test_encoder_matches_pytorch_past_the_log_buckets_reach(mlm_encoder):
    encoder, config = mlm_encoder
    reference = read_reference(DATA, "mlm")
    ids = reference["long_input_ids"][None]
    assert ids.shape[1] > 3 * config.max_relative_positions  # buckets clipped at both ends
    outputs = encoder(encoder_inputs(ids, np.ones_like(ids)))
    assert max_diff(np.asarray(outputs["sequence_output"])[0, reference["long_positions"]],
                     reference["long_sequence_output"]) <= TOLERANCE


def test_last_layer_at_some_positions_equals_the_full_encoder(mlm_encoder):
    encoder, _ = mlm_encoder
    reference = read_reference(DATA, "mlm")
    inputs = encoder_inputs(reference["input_ids"], reference["attention_mask"])
    full = np.asarray(encoder(inputs)["sequence_output"])
    positions = np.tile(np.array([[0, 3, 9]], "int32"), (len(full), 1))
    some = encoder.encode(inputs, output_positions=positions)["sequence_output"]
    assert max_diff(some, full[:, [0, 3, 9]]) <= 1e-5


def test_masked_lm_head_matches_pytorch():
    reference = read_reference(DATA, "mlm")
    pretrainer, _ = load_pretrainer(os.path.join(DATA, "mlm"))
    assert pretrainer.next_sentence is None
    encoded = pretrainer.encoder(encoder_inputs(reference["input_ids"],
                                                reference["attention_mask"]))
    rows, columns = reference["mlm_positions"].T
    states = np.asarray(encoded["sequence_output"])[rows, columns]
    logits = pretrainer.masked_lm(states[None])[0]
    assert max_diff(logits, reference["mlm_logits"]) <= TOLERANCE


def test_context_pooler_classifier_head_matches_pytorch():
    folder = os.path.join(DATA, "classifier")
    reference = read_reference(DATA, "classifier")
    encoder, _ = load_checkpoint(folder)
    model = kbc.BertClassifier(encoder, num_classes=3)
    assert model.head.hidden_activation == "gelu"  # DeBERTa's ContextPooler
    state = load_file(os.path.join(folder, "model.safetensors"))
    for layer, key in [(model.head.hidden, "pooler.dense"), (model.head.dense, "classifier")]:
        layer.kernel.assign(state[f"{key}.weight"].T)
        layer.bias.assign(state[f"{key}.bias"])
    logits = model(encoder_inputs(reference["input_ids"], reference["attention_mask"]))
    assert max_diff(logits, reference["logits"]) <= TOLERANCE


def test_presets_have_transformers_parameter_counts():
    """Counted on 1-layer encoders with a 64-token vocabulary at the presets' widths (the
    full models take minutes to initialize): every further layer adds the first block's
    weights, and every word a row of the table."""
    with open(os.path.join(DATA, "param_counts.json"), encoding="utf-8") as f:
        counts = json.load(f)
    assert counts["deberta_v3_base"]["num_parameters"] == 183_831_552
    for name, expected in counts.items():
        config = kbc.BertConfig.preset(name)
        theirs = kbc.BertConfig.from_dict({**expected["config"], "model_type": "deberta-v2"})
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                      "intermediate_size", "type_vocab_size", "layer_norm_eps",
                      "position_buckets", "max_relative_positions", "family"):
            assert getattr(theirs, field) == getattr(config, field), (name, field)
        encoder = kbc.BertEncoder(kbc.BertConfig.preset(name, num_layers=1, vocab_size=64))
        total = (encoder.count_params()
                 + (config.num_layers - 1) * encoder.blocks[0].count_params()
                 + (config.vocab_size - 64) * config.hidden_size)
        assert total == expected["num_parameters"], name


def test_tokenizer_gives_hugging_face_ids_on_held_out_real_text():
    preprocessor = kbc.BertPreprocessor(os.path.join(DATA, "mlm"), seq_length=512)
    tokenizer = preprocessor.tokenizer
    assert type(tokenizer).__name__ == "DebertaTokenizer" and not tokenizer.lower_case
    assert (preprocessor.pad_id, preprocessor.cls_id, preprocessor.sep_id,
            preprocessor.unk_id, preprocessor.mask_id) == (0, 1, 2, 3, 1000)
    reference = np.load(os.path.join(DATA, "tokenizer.npz"))
    texts = [str(text) for text in reference["texts"]]
    packed = preprocessor(texts, static_shape=False)
    lengths = packed["padding_mask"].numpy().sum(axis=1)
    for i, text in enumerate(texts):
        expected = reference["ids"][reference["splits"][i]:reference["splits"][i + 1]]
        np.testing.assert_array_equal(packed["token_ids"].numpy()[i, :lengths[i]], expected,
                                      err_msg=text)


def test_tokenizer_packs_texts_and_pairs_as_hugging_face():
    reference = read_reference(DATA, "mlm")
    preprocessor = kbc.BertPreprocessor(os.path.join(DATA, "mlm"), seq_length=512,
                                        static_shape=False)
    singles = int((reference["texts_b"] == "").sum())
    texts = [str(t) for t in reference["texts_a"]]
    packed = [preprocessor(texts[:singles]),
              preprocessor((texts[singles:], [str(t) for t in reference["texts_b"][singles:]]))]
    for features, rows in zip(packed, (slice(0, singles), slice(singles, None)), strict=True):
        ids = features["token_ids"].numpy()
        width = min(ids.shape[1], reference["input_ids"].shape[1])
        np.testing.assert_array_equal(ids[:, :width], reference["input_ids"][rows, :width])


def test_the_vocabulary_fills_the_table_with_deberta_spare_rows(mlm_encoder):
    _, config = mlm_encoder
    config.check_fits(1001, 512)  # 1,000 pieces and [MASK] in 1,100 rows, as 128,001 in 128,100
    with pytest.raises(kbc.errors.VocabularyMismatchError):
        config.check_fits(900, 512)


def test_unsupported_deberta_configurations_are_named(tmp_path):
    folder = tmp_path / "v2"
    shutil.copytree(os.path.join(DATA, "classifier"), folder)
    values = json.loads((folder / "config.json").read_text())
    values.update(position_biased_input=True, share_att_key=False)
    (folder / "config.json").write_text(json.dumps(values))
    with pytest.raises(CheckpointError, match="position_biased_input must be false.*"
                                              "share_att_key must be true"):
        load_checkpoint(folder)


def test_preset_folder_round_trips_the_checkpoint_and_its_tokenizer(tmp_path):
    encoder, preprocessor = kbc.from_preset(os.path.join(DATA, "mlm"))
    assert type(preprocessor.tokenizer).__name__ == "DebertaTokenizer"
    model = kbc.BertClassifier(encoder, num_classes=2, dropout=0.0)
    folder = kbc.save_to_preset(model, preprocessor, tmp_path / "preset")
    assert {"spm.model", "tokenizer_config.json"} <= set(os.listdir(folder))
    restored, restored_preprocessor = kbc.from_preset(folder)
    texts = ["Return the index of the first item.", "Café, naïve ''quotes''"]
    features = restored_preprocessor(texts, static_shape=False)
    np.testing.assert_array_equal(features["token_ids"],
                                  preprocessor(texts, static_shape=False)["token_ids"])
    np.testing.assert_allclose(restored(features), model(features), atol=1e-5)
