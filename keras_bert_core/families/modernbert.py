"""ModernBERT: rotary positions, GeGLU, no biases, and a sliding window in most layers."""

MODEL_TYPES = ("modernbert",)

# Global attention every third layer and a 128-token window in the others, a final norm;
# its BPE has 50,368 rows.
_MODERNBERT = {"family": "modernbert", "vocab_size": 50368, "max_position_embeddings": 8192,
               "type_vocab_size": 0, "layer_norm_eps": 1e-5, "dropout": 0.0,
               "attention_dropout": 0.0, "position_embedding": "rotary", "norm_first": True,
               "pooler": False, "classifier_activation": "gelu", "use_bias": False,
               "gated_feed_forward": True, "rotary_theta": 160000.0,
               "local_rotary_theta": 10000.0, "local_attention_window": 128,
               "global_attention_every": 3, "first_block_attention_norm": False}

PRESETS = {
    "modernbert_base": {**_MODERNBERT, "num_layers": 22, "hidden_size": 768, "num_heads": 12,
                        "intermediate_size": 1152},
    "modernbert_large": {**_MODERNBERT, "num_layers": 28, "hidden_size": 1024,
                         "num_heads": 16, "intermediate_size": 2624},
}


def huggingface_settings(values):
    """Our fields from a Hugging Face ModernBERT `config.json` (its own key names; the
    hub's files and transformers 5's spell layer types and rotary bases differently)."""
    if "position_embedding" in values:
        return {}  # our own JSON spells every field out
    ropes = values.get("rope_parameters") or {}
    every = values.get("global_attn_every_n_layers")
    if every is None and values.get("layer_types"):
        types = values["layer_types"]
        globals_ = [i for i, kind in enumerate(types) if kind == "full_attention"]
        every = globals_[1] if len(globals_) > 1 else len(types)
    sizes = ("vocab_size", "max_position_embeddings", "attention_dropout")
    return {
        **{key: value for key, value in _MODERNBERT.items() if key not in sizes},
        "hidden_act": values.get("hidden_activation", "gelu"),
        "layer_norm_eps": values.get("norm_eps", 1e-5),
        "dropout": values.get("mlp_dropout", 0.0),
        "use_bias": bool(values.get("mlp_bias", False) or values.get("attention_bias", False)
                         or values.get("norm_bias", False)),
        "rotary_theta": float((ropes.get("full_attention") or {}).get(
            "rope_theta", values.get("global_rope_theta", 160000.0))),
        "local_rotary_theta": float((ropes.get("sliding_attention") or {}).get(
            "rope_theta", values.get("local_rope_theta", 10000.0))),
        "local_attention_window": values.get("local_attention", 128),
        "global_attention_every": every or 3,
        "classifier_pooling": values.get("classifier_pooling", "cls"),
        "classifier_activation": values.get("classifier_activation", "gelu"),
    }
