"""Where DeBERTa-v2/v3's Hugging Face weights live, and the variants of its `config.json`
that the package's layers do not compute."""

import re

from keras_bert_core.checkpoints.weights import Source

PREFIX = "deberta."
SCOPES = ("embeddings.", "encoder.")
_TOP = {"embeddings/word_embeddings": "embeddings.word_embeddings",
        "embeddings/LayerNorm": "embeddings.LayerNorm",
        "encoder/rel_embeddings": "encoder.rel_embeddings",
        "encoder/rel_embeddings/LayerNorm": "encoder.LayerNorm"}
_BLOCK = {"attention/self/query": "attention.self.query_proj",
          "attention/self/key": "attention.self.key_proj",
          "attention/self/value": "attention.self.value_proj"}
_PARAMS = {"kernel": "weight", "gamma": "weight", "bias": "bias", "beta": "bias"}
# The masked-LM head of DebertaV2ForMaskedLM: `lm_predictions.lm_head` (legacy=False, and
# Microsoft's own checkpoints), else BERT's `cls.predictions` (transformers' legacy head).
_MLM_HEADS = {"lm_predictions.lm_head.": ("dense", "LayerNorm", "bias"),
              "cls.predictions.": ("transform.dense", "transform.LayerNorm", "bias")}


def deberta_source(name, prefix=""):
    """The `Source` of a canonical weight in a DeBERTa-v2/v3 checkpoint.

    Example:
    >>> deberta_source("encoder/layer_1/attention/self/key/kernel", "deberta.").key
    'deberta.encoder.layer.1.attention.self.key_proj.weight'
    >>> deberta_source("encoder/rel_embeddings/LayerNorm/gamma").key
    'encoder.LayerNorm.weight'
    """
    if name in _TOP:  # the tables
        return Source(f"{prefix}{_TOP[name]}.weight")
    path, param = name.rsplit("/", 1)
    match = re.fullmatch(r"encoder/layer_(\d+)/(.+)", path)
    if match:
        layer = _BLOCK.get(match[2], match[2].replace("/", "."))
        key = f"encoder.layer.{match[1]}.{layer}"
    else:
        key = _TOP.get(path, path.replace("/", "."))
    return Source(f"{prefix}{key}.{_PARAMS[param]}", transpose=param == "kernel")


def head_sources(keys):
    """The masked-LM head's `Source`s in a checkpoint with these `keys`."""
    scope = next((scope for scope in _MLM_HEADS if any(k.startswith(scope) for k in keys)),
                 "cls.predictions.")
    dense, norm, bias = (scope + name for name in _MLM_HEADS[scope])
    return {"mlm/transform/kernel": Source(f"{dense}.weight", transpose=True),
            "mlm/transform/bias": Source(f"{dense}.bias"),
            "mlm/layer_norm/gamma": Source(f"{norm}.weight"),
            "mlm/layer_norm/beta": Source(f"{norm}.bias"),
            "mlm/output_bias": Source(bias)}


def _attention_terms(values):
    terms = values.get("pos_att_type") or []
    if isinstance(terms, str):
        terms = terms.lower().split("|")
    return {term.strip() for term in terms}


def unsupported(values):
    """What in a DeBERTa-v2 `config.json` the package does not compute (DeBERTa-v3's
    configuration and v2's with the same attention load), or None."""
    hidden = values.get("hidden_size", 1536)
    heads = values.get("num_attention_heads", 24)
    rules = [
        (values.get("relative_attention", False), "relative_attention must be true"),
        (not values.get("position_biased_input", True),
         "position_biased_input must be false (no absolute positions)"),
        (_attention_terms(values) == {"c2p", "p2c"}, "pos_att_type must be 'p2c|c2p'"),
        (values.get("share_att_key", False), "share_att_key must be true"),
        ("layer_norm" in str(values.get("norm_rel_ebd", "none")).lower(),
         "norm_rel_ebd must be 'layer_norm'"),
        (values.get("position_buckets", -1) > 0, "position_buckets must be positive"),
        (not values.get("conv_kernel_size", 0), "conv_kernel_size must be 0 (no conv layer)"),
        (values.get("embedding_size", hidden) == hidden,
         "embedding_size must equal hidden_size"),
        (values.get("pooler_hidden_size", hidden) == hidden,
         "pooler_hidden_size must equal hidden_size"),
        (values.get("attention_head_size", hidden // heads) == hidden // heads,
         "attention_head_size must be hidden_size / num_attention_heads"),
    ]
    problems = [message for holds, message in rules if not holds]
    return "; ".join(problems) or None
