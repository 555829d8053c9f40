"""Where ModernBERT's Hugging Face weights live: its own layer names, and the fused
query/key/value projection (`attn.Wqkv`) read as three."""

import re

from keras_bert_core.checkpoints.weights import Source

PREFIX = "model."
SCOPES = ("embeddings.", "layers.", "final_norm.")
_TOP = {"embeddings/word_embeddings": "embeddings.tok_embeddings",
        "embeddings/LayerNorm": "embeddings.norm", "encoder/final_norm": "final_norm"}
_BLOCK = {"attention/self/query": "attn.Wq", "attention/self/key": "attn.Wk",
          "attention/self/value": "attn.Wv", "attention/output/dense": "attn.Wo",
          "attention/output/LayerNorm": "attn_norm", "intermediate/dense": "mlp.Wi",
          "output/dense": "mlp.Wo", "output/LayerNorm": "mlp_norm"}
_PARAMS = {"kernel": "weight", "gamma": "weight", "bias": "bias", "beta": "bias"}
# ModernBertForMaskedLM's head (bias-free dense and norm; the decoder tied, with a bias).
HEAD_SOURCES = {"mlm/transform/kernel": Source("head.dense.weight", transpose=True),
                "mlm/layer_norm/gamma": Source("head.norm.weight"),
                "mlm/output_bias": Source("decoder.bias")}
_FUSED = re.compile(r"(.*attn\.)Wqkv\.(weight|bias)")


def modernbert_source(name, prefix=""):
    """The `Source` of a canonical weight in a ModernBERT checkpoint.

    Example:
    >>> modernbert_source("encoder/layer_2/intermediate/dense/kernel", "model.")
    Source(key='model.layers.2.mlp.Wi.weight', transpose=True, shape=None)
    >>> modernbert_source("embeddings/word_embeddings").key
    'embeddings.tok_embeddings.weight'
    """
    if name == "embeddings/word_embeddings":
        return Source(f"{prefix}{_TOP[name]}.weight")
    path, param = name.rsplit("/", 1)
    match = re.fullmatch(r"encoder/layer_(\d+)/(.+)", path)
    key = f"layers.{match[1]}.{_BLOCK[match[2]]}" if match else _TOP.get(path, path)
    return Source(f"{prefix}{key}.{_PARAMS[param]}", transpose=param == "kernel")


class SplitQKVReader:
    """A reader whose fused `attn.Wqkv` weights read as `attn.Wq`, `attn.Wk` and `attn.Wv`
    (Hugging Face stacks the three `[hidden, hidden]` projections along their output rows)."""

    def __init__(self, reader):
        self.path = reader.path
        self._reader = reader
        self._parts = {}
        self.shapes = {}
        for key, shape in reader.shapes.items():
            match = _FUSED.fullmatch(key)
            if not match:
                self.shapes[key] = shape
                continue
            rows = shape[0] // 3
            for index, part in enumerate("qkv"):
                name = f"{match[1]}W{part}.{match[2]}"
                self._parts[name] = (key, index * rows, (index + 1) * rows)
                self.shapes[name] = (rows, *shape[1:])

    def read(self, key):
        if key not in self._parts:
            return self._reader.read(key)
        fused, start, end = self._parts[key]
        return self._reader.read(fused)[start:end]
