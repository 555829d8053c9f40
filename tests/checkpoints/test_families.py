"""Hugging Face RoBERTa, ALBERT and DistilBERT checkpoints: parity with PyTorch.

The fixtures are small random models of each family saved by `transformers`, with PyTorch's
outputs, written by make_family_fixtures.py (beside this file).
"""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

import keras_bert_core as kbc
from keras_bert_core.checkpoints import CheckpointMismatchError, load_checkpoint, load_pretrainer
from tests.checkpoints.parity import max_diff, read_reference, reference_inputs
from tests.models.test_families import PUBLISHED_PARAMETERS

FAMILIES = os.path.join(os.path.dirname(__file__), "data", "families")
TOLERANCE = 1e-4
# Each family's classification head in Hugging Face's names: (hidden layer, output layer).
CLASSIFIER_KEYS = {"roberta": ("classifier.dense", "classifier.out_proj"),
                   "albert": (None, "classifier"),
                   "distilbert": ("pre_classifier", "classifier")}


@pytest.mark.parametrize("name", ["roberta", "albert", "albert_groups", "distilbert",
                                  "roberta_classifier", "albert_classifier",
                                  "distilbert_classifier"])
def test_encoder_matches_pytorch(name):
    reference = read_reference(FAMILIES, name)
    encoder, config = load_checkpoint(os.path.join(FAMILIES, name))
    assert config.family == name.split("_")[0]
    inputs = reference_inputs(reference)
    outputs = encoder(inputs)
    real = inputs["padding_mask"].astype(bool)
    assert max_diff(np.asarray(outputs["sequence_output"])[real],
                     reference["sequence_output"]) <= TOLERANCE
    assert ("pooled_output" in outputs) == (config.family != "distilbert")
    if "pooled_output" in reference:  # masked-LM RoBERTa checkpoints have no pooler
        assert max_diff(outputs["pooled_output"], reference["pooled_output"]) <= TOLERANCE


@pytest.mark.parametrize("name", ["roberta", "albert", "distilbert"])
def test_pretraining_heads_match_pytorch(name):
    reference = read_reference(FAMILIES, name)
    pretrainer, config = load_pretrainer(os.path.join(FAMILIES, name))
    # ALBERT's sentence-order head loads as the sentence head; the others have none.
    assert (pretrainer.next_sentence is not None) == (name == "albert")
    encoded = pretrainer.encoder(reference_inputs(reference))
    rows, columns = reference["mlm_positions"].T
    states = np.asarray(encoded["sequence_output"])[rows, columns]
    logits = pretrainer.masked_lm(states[None])[0]
    assert max_diff(logits, reference["mlm_logits"]) <= TOLERANCE
    if name == "albert":
        sop = pretrainer.next_sentence(encoded["pooled_output"])
        assert max_diff(sop, reference["sop_logits"]) <= TOLERANCE


@pytest.mark.parametrize("family", ["roberta", "albert", "distilbert"])
def test_the_family_classifier_head_matches_pytorch(family):
    folder = os.path.join(FAMILIES, f"{family}_classifier")
    reference = read_reference(FAMILIES, f"{family}_classifier")
    encoder, _ = load_checkpoint(folder)
    model = kbc.BertClassifier(encoder, num_classes=3)
    state = load_file(os.path.join(folder, "model.safetensors"))
    hidden, output = CLASSIFIER_KEYS[family]
    layers = [(model.head.dense, output)] + ([(model.head.hidden, hidden)] if hidden else [])
    for layer, key in layers:
        layer.kernel.assign(state[f"{key}.weight"].T)
        layer.bias.assign(state[f"{key}.bias"])
    logits = model.predict(reference_inputs(reference), verbose=0)
    assert max_diff(logits, reference["logits"]) <= TOLERANCE


def test_presets_are_the_published_configurations_transformers_counts():
    # make_family_fixtures.py counted them with transformers for the published configs;
    # tests/models/test_families.py checks our encoders have these counts.
    with open(os.path.join(FAMILIES, "param_counts.json"), encoding="utf-8") as f:
        published = json.load(f)
    for name, entry in published.items():
        preset = "base" if name == "bert_base" else name
        assert entry["num_parameters"] == PUBLISHED_PARAMETERS[preset]
        ours = kbc.BertConfig.preset(preset)
        theirs = kbc.BertConfig.from_dict(entry["config"])
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                      "intermediate_size", "max_position_embeddings", "type_vocab_size",
                      "embedding_size", "num_layer_groups", "pooler", "position_offset",
                      "layer_norm_eps", "hidden_act", "family"):
            assert getattr(theirs, field) == getattr(ours, field), (name, field)


def test_a_family_mismatch_names_the_weights(tmp_path):
    folder = tmp_path / "distilbert"
    folder.mkdir()
    source = os.path.join(FAMILIES, "distilbert")
    state = load_file(os.path.join(source, "model.safetensors"))
    del state["distilbert.transformer.layer.1.ffn.lin2.weight"]
    from safetensors.numpy import save_file

    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(
        open(os.path.join(source, "config.json"), encoding="utf-8").read())
    with pytest.raises(CheckpointMismatchError, match=r"transformer\.layer\.1\.ffn\.lin2"):
        load_checkpoint(folder)


# Hugging Face's rules (its former TF1 ALBERT converter) that turn google-research/albert
# variable names into its own, applied in order: an independent account of the TF1 names.
_HF_FROM_ALBERT_TF1 = [
    ("ffn_1", "ffn"), ("bert/", "albert/"), ("attention_1", "attention"), ("transform/", ""),
    ("LayerNorm_1", "full_layer_layer_norm"), ("LayerNorm", "attention/LayerNorm"),
    ("transformer/", ""), ("intermediate/dense/", ""), ("ffn/intermediate/output/dense/",
                                                        "ffn_output/"),
    ("/output/", "/"), ("/self/", "/"), ("pooler/dense", "pooler"),
    ("cls/predictions", "predictions"), ("predictions/attention", "predictions"),
    ("embeddings/attention", "embeddings"), ("inner_group_", "albert_layers/"),
    ("group_", "albert_layer_groups/"), ("cls/seq_relationship/output_", "sop_classifier/"
                                                                      "classifier/"),
]
_HF_PARAMS = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias",
              "weights": "weight", "output_bias": "bias"}


def _hf_name(tf1_name):
    for old, new in _HF_FROM_ALBERT_TF1:
        tf1_name = tf1_name.replace(old, new)
    if tf1_name.endswith("_embeddings"):
        return tf1_name.replace("/", ".") + ".weight"
    path, param = tf1_name.rsplit("/", 1)
    if path == "predictions":  # predictions/output_bias
        return "predictions.bias"
    return f"{path.replace('/', '.')}.{_HF_PARAMS.get(param, param)}"


def test_google_research_albert_tf1_checkpoint_matches_pytorch(tmp_path):
    import tensorflow as tf

    from keras_bert_core.checkpoints import encoder_variables, google_research

    source = os.path.join(FAMILIES, "albert")
    state = load_file(os.path.join(source, "model.safetensors"))
    hf_config = json.loads(open(os.path.join(source, "config.json"), encoding="utf-8").read())
    # albert_config.json as google-research/albert writes it: no model_type, and "gelu"
    # for its tanh approximation.
    albert_config = {key: hf_config[key] for key in (
        "attention_probs_dropout_prob", "embedding_size", "hidden_dropout_prob", "hidden_size",
        "initializer_range", "intermediate_size", "max_position_embeddings",
        "num_attention_heads", "num_hidden_groups", "num_hidden_layers", "inner_group_num",
        "type_vocab_size", "vocab_size")}
    (tmp_path / "albert_config.json").write_text(json.dumps({**albert_config,
                                                              "hidden_act": "gelu"}))
    # The names our loader reads, each filled from the Hugging Face weight HF's rules map it to.
    names = [f"bert/{google_research._albert_name(name)}"
             for name in encoder_variables(load_checkpoint(source)[0])]
    names += [source.key for source in google_research._HEADS.values()]
    tensors = {}
    for name in names:
        value = state[_hf_name(name)]
        linear = name.endswith("/kernel")  # PyTorch Linear: [out, in]
        tensors[name] = value.T if linear else value
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "model.ckpt-10000"), tensor_names=list(tensors),
                      shape_and_slices=[""] * len(tensors),
                      tensors=[tf.constant(v) for v in tensors.values()])
    reference = read_reference(FAMILIES, "albert")
    pretrainer, config = load_pretrainer(str(tmp_path / "model.ckpt-10000"))
    assert config.family == "albert" and config.hidden_act == "gelu_approximate"
    encoded = pretrainer.encoder(reference_inputs(reference))
    real = reference["attention_mask"].astype(bool)
    assert max_diff(np.asarray(encoded["sequence_output"])[real],
                     reference["sequence_output"]) <= TOLERANCE
    rows, columns = reference["mlm_positions"].T
    logits = pretrainer.masked_lm(np.asarray(encoded["sequence_output"])[rows, columns][None])
    assert max_diff(logits[0], reference["mlm_logits"]) <= TOLERANCE
    sop = pretrainer.next_sentence(encoded["pooled_output"])
    assert max_diff(sop, reference["sop_logits"]) <= TOLERANCE
