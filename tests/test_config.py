import json

import pytest

from keras_bert_core import PRESETS, BertConfig, ConfigError


def test_presets_have_the_published_sizes():
    expected = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8),
                "medium": (8, 512, 8), "base": (12, 768, 12), "large": (24, 1024, 16)}
    for name, (layers, hidden, heads) in expected.items():
        cfg = BertConfig.preset(name)
        assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads) == (layers, hidden, heads)
        assert cfg.intermediate_size == 4 * hidden
    family_presets = {"roberta_base", "roberta_large", "albert_base", "albert_large",
                      "albert_xlarge", "albert_xxlarge", "distilbert_base",
                      "modernbert_base", "modernbert_large", "deberta_v3_xsmall",
                      "deberta_v3_small", "deberta_v3_base", "deberta_v3_large",
                      "electra_small", "electra_base", "electra_large", "xlm_roberta_base",
                      "xlm_roberta_large"}
    assert set(PRESETS) == set(expected) | family_presets


def test_unknown_preset_lists_the_choices():
    with pytest.raises(ValueError, match="tiny"):
        BertConfig.preset("huge")


def test_reads_hugging_face_and_google_research_json(tmp_path):
    hf = {"architectures": ["BertModel"], "hidden_act": "gelu", "hidden_size": 384,
          "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 30522,
          "initializer_range": 0.02, "layer_norm_eps": 1e-12, "model_type": "bert"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf))
    cfg = BertConfig.from_json(path)
    assert (cfg.num_layers, cfg.num_heads, cfg.hidden_size, cfg.head_size) == (6, 12, 384, 32)

    google = {k: v for k, v in hf.items() if k not in ("layer_norm_eps", "architectures",
                                                        "model_type")}
    path.write_text(json.dumps(google))
    assert BertConfig.from_json(path) == cfg


def test_json_round_trip_uses_bert_key_names(tmp_path):
    cfg = BertConfig.preset("mini", hidden_act="gelu_approximate", dropout=0.0)
    path = tmp_path / "bert_config.json"
    cfg.to_json(path)
    values = json.loads(path.read_text())
    assert values["num_hidden_layers"] == 4 and values["hidden_act"] == "gelu_new"
    assert BertConfig.from_json(path) == cfg


def test_invalid_values_are_named():
    # ConfigError (a ValueError), which kbc prints as one line.
    with pytest.raises(ConfigError, match="hidden_size 100 is not divisible by num_heads 12"):
        BertConfig(hidden_size=100, num_heads=12)
    with pytest.raises(ValueError, match="hidden_act"):
        BertConfig(hidden_act="swishy")
    with pytest.raises(ValueError, match="vocab_size"):
        BertConfig(vocab_size=0)


def test_broken_json_names_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="config.json"):
        BertConfig.from_json(path)


def test_a_vocabulary_fills_its_model_s_word_embeddings_up_to_hardware_padding():
    from keras_bert_core.errors import VocabularyMismatchError

    config = BertConfig.preset("tiny", vocab_size=30522)
    config.check_fits(30522, 128)
    for padded in (30528, 30592):  # to multiples of 8 (NVIDIA) and 128 (Megatron)
        BertConfig.preset("tiny", vocab_size=padded).check_fits(30522, 128)
    for size, problem in ((1000, "was cut"), (13409, "was cut"), (30523, "have only")):
        with pytest.raises(VocabularyMismatchError, match=f"has {size:,} tokens.*{problem}"):
            config.check_fits(size, 128)


def test_modernbert_config_round_trips_through_our_json(tmp_path):
    cfg = BertConfig.preset("modernbert_base", local_attention_window=64, vocab_size=1000)
    path = tmp_path / "config.json"
    cfg.to_json(path)
    assert BertConfig.from_json(path) == cfg


def test_reads_a_modernbert_hub_config(tmp_path):
    # answerdotai/ModernBERT-base's config.json keys (transformers 4 spelling).
    hub = {"model_type": "modernbert", "vocab_size": 50368, "hidden_size": 768,
           "intermediate_size": 1152, "num_hidden_layers": 22, "num_attention_heads": 12,
           "hidden_activation": "gelu", "max_position_embeddings": 8192, "norm_eps": 1e-05,
           "norm_bias": False, "mlp_bias": False, "attention_bias": False,
           "global_attn_every_n_layers": 3, "local_attention": 128,
           "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
           "classifier_pooling": "mean", "embedding_dropout": 0.0, "mlp_dropout": 0.0,
           "attention_dropout": 0.0, "pad_token_id": 50283}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hub))
    assert BertConfig.from_json(path) == BertConfig.preset("modernbert_base",
                                                           classifier_pooling="mean")
