"""Hugging Face safetensors: parity with PyTorch on a real checkpoint, layouts, errors."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from keras_bert_core.checkpoints import (
    CheckpointError,
    CheckpointMismatchError,
    detect_format,
    encoder_variables,
    load_checkpoint,
    load_pretrainer,
    read_pretraining_head_weights,
)
from keras_bert_core.checkpoints.huggingface import hf_key

DATA = os.path.join(os.path.dirname(__file__), "data")


def _hf_state(encoder, prefix=""):
    """The encoder's weights as Hugging Face's `BertModel` names and `[out, in]` layout."""
    return {hf_key(name, prefix): np.asarray(v).T if name.endswith("/kernel") else np.asarray(v)
            for name, v in encoder_variables(encoder).items()}


def _write(folder, state, config):
    os.makedirs(folder, exist_ok=True)
    # safetensors' numpy writer stores a transposed view in memory order, silently.
    save_file({name: np.ascontiguousarray(value) for name, value in state.items()},
              os.path.join(folder, "model.safetensors"))
    config.to_json(os.path.join(folder, "config.json"))
    return folder


def _assert_same_outputs(run, a, b, batch):
    expected, actual = run(a, batch), run(b, batch)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-6)


def test_matches_pytorch_bert_on_all_minilm_l6_v2(minilm_dir):
    model_dir = str(minilm_dir)
    # Written by make_hf_reference.py (beside this file) with transformers' PyTorch BertModel.
    reference = np.load(os.path.join(DATA, "minilm_reference.npz"))
    inputs = {name: reference[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    assert len(inputs["token_ids"]) >= 20 and inputs["segment_ids"].max() == 1

    assert detect_format(model_dir) == "huggingface"
    encoder, config = load_checkpoint(model_dir)
    assert (config.num_layers, config.hidden_size, config.num_heads) == (6, 384, 12)
    outputs = encoder(inputs)
    real = inputs["padding_mask"].astype(bool)
    sequence_diff = np.abs(np.asarray(outputs["sequence_output"])[real]
                           - reference["sequence_output"]).max()
    pooled_diff = np.abs(np.asarray(outputs["pooled_output"]) - reference["pooled_output"]).max()
    print(f"all-MiniLM-L6-v2 vs PyTorch BertModel ({reference['versions']}) on "
          f"{len(real)} inputs, {real.sum()} tokens: max abs diff sequence_output "
          f"{sequence_diff:.2e}, pooled_output {pooled_diff:.2e}")
    assert sequence_diff <= 1e-4
    assert pooled_diff <= 1e-4


@pytest.mark.parametrize("prefix", ["", "bert."])
def test_round_trip_both_layouts(tmp_path, tiny_config, random_encoder, batch, run, prefix):
    encoder = random_encoder(tiny_config)
    state = _hf_state(encoder, prefix)
    # A buffer old transformers versions saved; it is not a weight.
    state[prefix + "embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None]
    folder = _write(tmp_path / "hf", state, tiny_config)
    loaded, config = load_checkpoint(folder)
    assert config == tiny_config
    _assert_same_outputs(run, encoder, loaded, batch)


def test_loads_the_safetensors_file_and_shards(tmp_path, tiny_config, random_encoder, batch,
                                               run):
    encoder = random_encoder(tiny_config)
    state = _hf_state(encoder)
    folder = _write(tmp_path / "single", state, tiny_config)
    _assert_same_outputs(
        run, encoder, load_checkpoint(os.path.join(folder, "model.safetensors"))[0], batch)

    sharded = tmp_path / "sharded"
    os.makedirs(sharded)
    tiny_config.to_json(sharded / "config.json")
    names = sorted(state)
    weight_map = {}
    for index, part in enumerate((names[::2], names[1::2])):
        shard = f"model-0000{index + 1}-of-00002.safetensors"
        save_file({name: np.ascontiguousarray(state[name]) for name in part},
                  str(sharded / shard))
        weight_map.update(dict.fromkeys(part, shard))
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    _assert_same_outputs(run, encoder, load_checkpoint(sharded)[0], batch)


def test_legacy_layer_norm_names(tmp_path, tiny_config, random_encoder, batch, run):
    encoder = random_encoder(tiny_config)
    state = {name.replace("LayerNorm.weight", "LayerNorm.gamma")
             .replace("LayerNorm.bias", "LayerNorm.beta"): value
             for name, value in _hf_state(encoder).items()}
    assert "embeddings.LayerNorm.gamma" in state
    loaded, _ = load_checkpoint(_write(tmp_path, state, tiny_config))
    _assert_same_outputs(run, encoder, loaded, batch)


def test_missing_pooler_warns_and_loads_the_rest(tmp_path, tiny_config, random_encoder, batch,
                                                 run):
    encoder = random_encoder(tiny_config)
    state = {k: v for k, v in _hf_state(encoder).items() if not k.startswith("pooler.")}
    with pytest.warns(UserWarning, match="no pooler weights"):
        loaded, _ = load_checkpoint(_write(tmp_path, state, tiny_config))
    np.testing.assert_allclose(run(loaded, batch)["sequence_output"],
                               run(encoder, batch)["sequence_output"], atol=1e-6)


def _pretraining_state(encoder, rng, nsp=True, decoder_bias=False):
    hidden, vocab = encoder.config.hidden_size, encoder.config.vocab_size
    state = _hf_state(encoder, "bert.")
    state.update({
        "cls.predictions.transform.dense.weight": rng.normal(size=(hidden, hidden)),
        "cls.predictions.transform.dense.bias": rng.normal(size=hidden),
        "cls.predictions.transform.LayerNorm.weight": rng.normal(size=hidden),
        "cls.predictions.transform.LayerNorm.bias": rng.normal(size=hidden),
        "cls.predictions.decoder.bias" if decoder_bias else "cls.predictions.bias":
            rng.normal(size=vocab),
    })
    if nsp:
        state["cls.seq_relationship.weight"] = rng.normal(size=(2, hidden))
        state["cls.seq_relationship.bias"] = rng.normal(size=2)
    return {name: value.astype(np.float32) for name, value in state.items()}


def test_pretraining_heads_in_keras_layout(tmp_path, tiny_config, random_encoder):
    state = _pretraining_state(random_encoder(tiny_config), np.random.default_rng(5))
    heads = read_pretraining_head_weights(_write(tmp_path, state, tiny_config))
    np.testing.assert_array_equal(heads["nsp/kernel"], state["cls.seq_relationship.weight"].T)
    np.testing.assert_array_equal(heads["mlm/transform/kernel"],
                                  state["cls.predictions.transform.dense.weight"].T)
    np.testing.assert_array_equal(heads["mlm/output_bias"], state["cls.predictions.bias"])
    assert heads["nsp/kernel"].shape == (64, 2) and len(heads) == 7


def test_masked_lm_checkpoint_loads_into_a_pretrainer(tmp_path, tiny_config, random_encoder,
                                                      batch):
    encoder = random_encoder(tiny_config)
    state = _pretraining_state(encoder, np.random.default_rng(6), nsp=False, decoder_bias=True)
    folder = _write(tmp_path, state, tiny_config)
    assert set(read_pretraining_head_weights(folder)) == {
        "mlm/transform/kernel", "mlm/transform/bias", "mlm/layer_norm/gamma",
        "mlm/layer_norm/beta", "mlm/output_bias"}
    with pytest.warns(UserWarning, match="nsp/bias"):
        pretrainer, _ = load_pretrainer(folder)
    weights = pretrainer.get_head_weights()
    np.testing.assert_array_equal(weights["mlm/output_bias"],
                                  state["cls.predictions.decoder.bias"])
    np.testing.assert_array_equal(np.asarray(pretrainer.encoder.word_embeddings),
                                  state["bert.embeddings.word_embeddings.weight"])
    out = pretrainer({**batch, "masked_positions": np.zeros((3, 2), "int32")})
    assert out["mlm"].shape == (3, 2, tiny_config.vocab_size)


def test_mismatch_lists_missing_layer_extra_weight_and_wrong_shape(tmp_path, tiny_config,
                                                                   random_encoder):
    state = _hf_state(random_encoder(tiny_config))
    state = {k: v for k, v in state.items() if not k.startswith("encoder.layer.1.")}
    state["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(3, np.float32)
    state["embeddings.token_type_embeddings.weight"] = np.zeros((16, 64), np.float32)
    state["classifier.weight"] = np.zeros((2, 64), np.float32)  # a task head: not in scope
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(_write(tmp_path, state, tiny_config))
    error = info.value
    assert len(error.missing) == 16
    assert "encoder.layer.1.attention.self.query.weight [64, 64]" in error.missing
    assert "encoder.layer.1.intermediate.dense.weight [128, 64]" in error.missing
    assert error.unexpected == ["encoder.layer.0.attention.self.rotary.weight"]
    assert error.mis_shaped == ["embeddings.token_type_embeddings.weight: checkpoint has "
                                "[16, 64], the model expects [2, 64]"]


def test_pytorch_pickles_are_refused_unopened(tmp_path, tiny_config):
    tiny_config.to_json(tmp_path / "config.json")
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 would run code if unpickled")
    with pytest.raises(CheckpointError, match="never unpickles.*safetensors"):
        load_checkpoint(tmp_path)


def test_truncated_safetensors_names_the_file(tmp_path, tiny_config, random_encoder):
    folder = _write(tmp_path, _hf_state(random_encoder(tiny_config)), tiny_config)
    weights = os.path.join(folder, "model.safetensors")
    content = open(weights, "rb").read()
    with open(weights, "wb") as f:
        f.write(content[: len(content) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors: not a readable safetensors"):
        load_checkpoint(folder)


def test_other_architectures_are_refused(tmp_path, tiny_config, random_encoder):
    folder = _write(tmp_path, _hf_state(random_encoder(tiny_config)), tiny_config)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(CheckpointError, match="model_type 'gpt2' is not one of BERT's family"):
        load_checkpoint(folder)
