"""DeBERTa-v3: disentangled attention over log-bucketed relative positions, no absolute
positions, no token types, and a GELU dense layer on the first token before the classifier
(its `ContextPooler`)."""

MODEL_TYPES = ("deberta-v2", "deberta")

# Its SentencePiece model has 128,000 pieces, [MASK] after them, and the table 99 spare rows.
_DEBERTA = {"family": "deberta", "vocab_size": 128100, "type_vocab_size": 0,
            "layer_norm_eps": 1e-7, "position_embedding": "relative", "position_buckets": 256,
            "max_relative_positions": 512, "pooler": False, "classifier_activation": "gelu"}

PRESETS = {
    "deberta_v3_xsmall": {**_DEBERTA, "num_layers": 12, "hidden_size": 384, "num_heads": 6,
                          "intermediate_size": 1536},
    "deberta_v3_small": {**_DEBERTA, "num_layers": 6, "hidden_size": 768, "num_heads": 12,
                         "intermediate_size": 3072},
    "deberta_v3_base": {**_DEBERTA, "num_layers": 12, "hidden_size": 768, "num_heads": 12,
                        "intermediate_size": 3072},
    "deberta_v3_large": {**_DEBERTA, "num_layers": 24, "hidden_size": 1024, "num_heads": 16,
                         "intermediate_size": 4096},
}


def huggingface_settings(values):
    """Our fields from a Hugging Face DeBERTa-v2 `config.json` (checkpoints.huggingface
    refuses the variants these layers do not compute)."""
    if "position_embedding" in values:
        return {}  # our own JSON spells every field out
    distance = values.get("max_relative_positions", -1)
    if distance < 1:  # Hugging Face's default: the absolute table's length
        distance = values.get("max_position_embeddings", 512)
    return {"family": "deberta", "position_embedding": "relative", "pooler": False,
            "position_buckets": values.get("position_buckets", -1),
            "max_relative_positions": distance,
            # DebertaV2Config's defaults where the file leaves them out.
            "type_vocab_size": values.get("type_vocab_size", 0),
            "layer_norm_eps": values.get("layer_norm_eps", 1e-7),
            "classifier_activation": values.get("pooler_hidden_act", "gelu")}
