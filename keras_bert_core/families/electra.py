"""ELECTRA: BERT's encoder with a factorized embedding projection where the tables are
narrower than the blocks, no pooler, and a GELU classifier head on the first token."""

MODEL_TYPES = ("electra",)

# The discriminators of Clark et al. (2020); WordPiece with BERT's uncased vocabulary.
_ELECTRA = {"family": "electra", "vocab_size": 30522, "pooler": False,
            "classifier_activation": "gelu"}

PRESETS = {
    "electra_small": {**_ELECTRA, "num_layers": 12, "hidden_size": 256, "num_heads": 4,
                      "intermediate_size": 1024, "embedding_size": 128},
    "electra_base": {**_ELECTRA, "num_layers": 12, "hidden_size": 768, "num_heads": 12,
                     "intermediate_size": 3072},
    "electra_large": {**_ELECTRA, "num_layers": 24, "hidden_size": 1024, "num_heads": 16,
                      "intermediate_size": 4096},
}


def huggingface_settings(values):
    # Tables as wide as the blocks need no projection: our `None`.
    embedding_size = values.get("embedding_size")
    if embedding_size == values.get("hidden_size"):
        embedding_size = None
    return {**_ELECTRA, "vocab_size": values.get("vocab_size", 30522),
            "embedding_size": embedding_size,
            "classifier_activation": values.get("classifier_activation", "gelu")}
