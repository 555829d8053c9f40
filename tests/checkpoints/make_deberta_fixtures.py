"""Write small, real Hugging Face DeBERTa-v3 checkpoints for the tests.

The published weights cannot be downloaded in the tests, so this builds tiny randomly
initialized DeBERTa-v2 models in DeBERTa-v3's configuration (relative attention over
log-bucketed positions, shared key projections, the relative embeddings' LayerNorm, no
absolute positions, no token types) with PyTorch `transformers`, saves them with
`save_pretrained`, and runs them to store reference outputs. The tokenizer is a SentencePiece
unigram model trained here on real text (the standard library's docstrings and the
`*.dist-info/METADATA` of this Python's packages) with DeBERTa-v3's ids: [PAD] 0, [CLS] 1,
[SEP] 2, [UNK] 3, the default NFKC normalizer, and [MASK] added after the pieces (as
DeBERTa-v3's 128,000); the folders hold `spm.model` and `tokenizer_config.json` alone, as
Microsoft's do.

It writes `tests/checkpoints/data/deberta/`:

    mlm/                DebertaV2ForMaskedLM (3 layers, 16 buckets reaching 64 positions,
                        so texts longer than 8 tokens use the log buckets), with spm.model
    classifier/         DebertaV2ForSequenceClassification (2 layers, DeBERTa-v3's 256
                        buckets and 512 positions, 3 labels), without tokenizer files
    tokenizer.npz       `texts`: lines of real text held out of the tokenizer's training
                        (other packages' METADATA, other docstrings), and `ids`/`splits`,
                        DebertaV2TokenizerFast's ids of each with [CLS] and [SEP]
    buckets.npz         `relative` and `buckets`: transformers' make_log_bucket_position
                        at DeBERTa-v3's 256 buckets and 512 positions
    param_counts.json   parameter counts of DeBERTa-v3 xsmall, small, base and large

Each model folder's `reference.npz` holds `texts_a`/`texts_b` ('' for single texts), the
tokenizer's `input_ids` and `attention_mask` for 5 single texts then 3 pairs padded to one
width, the base model's `sequence_output` at the real positions (row-major), and the head's
outputs: `mlm_logits` at `mlm_positions` (every 20th real token) or `logits`. The mlm folder
also holds a text of about 200 tokens: `long_input_ids`, and `long_sequence_output` at
`long_positions` (every 7th position and the last).

Run it under the reference venv (torch, transformers 5, sentencepiece); the test suite never
imports it:

    /work/refvenv/bin/python tests/checkpoints/make_deberta_fixtures.py
"""

import ast
import importlib.metadata
import io
import json
import pathlib
import shutil
import sysconfig

import numpy as np
import sentencepiece
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = pathlib.Path(__file__).with_name("data") / "deberta"
PIECES = 1000  # [MASK] is id 1000, and the table has 99 spare rows after it (as 128,100)
TABLE_ROWS = 1100
MLM_EVERY = 20
LONG_EVERY = 7
TEST_LINES = 200
SINGLES = [
    "Hello world!",
    "Café, naïve, résumé: ÀÉÎ accents. 東京 😀",
    "tabs\tand   runs of    spaces\n\nand newlines, ''quoted'' and ``quoted``",
    "Return the index of the first item whose value is x.",
    "Return a new list of the items in the sequence, raising ValueError if the value is not "
    "found; the default is None.",
]
PAIRS = [("How is the file opened?", "With open(), in text mode by default."),
         ("Is the lock thread-safe?", "No; use a lock."),
         ("a", "b")]
V3 = {"relative_attention": True, "position_biased_input": False, "pos_att_type": "p2c|c2p",
      "share_att_key": True, "norm_rel_ebd": "layer_norm", "type_vocab_size": 0,
      "layer_norm_eps": 1e-7, "max_position_embeddings": 512}


def docstrings():
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
                text = ast.get_docstring(node)
                if text and len(text) >= 40:
                    texts.append(text)
    return texts


def metadata():
    """Each installed distribution's METADATA text, in name order."""
    texts = {}
    for distribution in importlib.metadata.distributions():
        text = distribution.read_text("METADATA")
        if text:
            texts[distribution.metadata["Name"].lower()] = text
    return [texts[name] for name in sorted(texts)]


def corpora():
    """(training lines, held-out lines): every other package's METADATA and every fifth
    docstring held out."""
    documents, packages = docstrings(), metadata()
    train = [t for i, t in enumerate(documents) if i % 5] + packages[::2]
    held_out = [t for i, t in enumerate(documents) if not i % 5] + packages[1::2]
    def lines(texts):
        return [line.strip() for text in texts for line in text.splitlines() if line.strip()]
    return lines(train), lines(held_out)


def train_tokenizer(folder, lines):
    model = io.BytesIO()  # not a model_prefix, which would store the scratch path in it
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=PIECES,
        model_type="unigram", pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", character_coverage=0.9995,
        input_sentence_size=200000, shuffle_input_sentence=False, num_threads=1,
        minloglevel=2)
    (folder / "spm.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": False, "split_by_punct": False,
         "tokenizer_class": "DebertaV2Tokenizer", "model_max_length": 512}, indent=2) + "\n")
    tokenizer = transformers.DebertaV2TokenizerFast.from_pretrained(str(folder))
    assert tokenizer.mask_token_id == PIECES and len(tokenizer) == PIECES + 1
    return tokenizer


def perturb(model, seed):
    """Random LayerNorm scales and biases, so a wrong norm or a dropped bias shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("LayerNorm.weight"):
                parameter.copy_(0.5 + torch.rand(parameter.shape, generator=generator))
            elif name.endswith("bias"):
                parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))


def encode(tokenizer):
    singles = tokenizer(SINGLES)["input_ids"]
    pairs = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS])["input_ids"]
    width = max(len(ids) for ids in singles + pairs)
    batch = [ids + [tokenizer.pad_token_id] * (width - len(ids)) for ids in singles + pairs]
    return {"input_ids": np.array(batch, np.int32),
            "attention_mask": np.array([[1] * len(ids) + [0] * (width - len(ids))
                                        for ids in singles + pairs], np.int32),
            "texts_a": np.array(SINGLES + [a for a, _ in PAIRS]),
            "texts_b": np.array([""] * len(SINGLES) + [b for _, b in PAIRS])}


def run(model, input_ids, attention_mask):
    with torch.no_grad():
        inputs = {"input_ids": torch.from_numpy(input_ids).long(),
                  "attention_mask": torch.from_numpy(attention_mask).long()}
        base = model.deberta(**inputs).last_hidden_state.numpy()
        head = model(**inputs).logits.numpy()
    return base.astype(np.float32), head.astype(np.float32)


def write_model(name, model, tokenizer, tokenizer_folder, seed, long_text=None):
    folder = OUTPUT / name
    folder.mkdir(parents=True)
    if tokenizer_folder is not None:
        for source in tokenizer_folder.iterdir():
            shutil.copy(source, folder / source.name)
    perturb(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    model = type(model).from_pretrained(str(folder)).eval()  # as a user reads it back
    features = encode(tokenizer)
    sequence, head = run(model, features["input_ids"], features["attention_mask"])
    real = features["attention_mask"].astype(bool)
    outputs = {"sequence_output": sequence[real]}
    if head.ndim == 3:
        rows, columns = np.nonzero(real)
        keep = np.arange(len(rows)) % MLM_EVERY == 0
        outputs["mlm_positions"] = np.stack([rows[keep], columns[keep]], 1).astype(np.int32)
        outputs["mlm_logits"] = head[rows[keep], columns[keep]]
    else:
        outputs["logits"] = head
    if long_text is not None:
        ids = np.array([tokenizer(long_text)["input_ids"]], np.int32)
        long_sequence, _ = run(model, ids, np.ones_like(ids))
        positions = np.unique(np.r_[np.arange(0, ids.shape[1], LONG_EVERY), ids.shape[1] - 1])
        outputs.update(long_input_ids=ids[0], long_positions=positions.astype(np.int32),
                       long_sequence_output=long_sequence[0, positions])
    np.savez_compressed(
        folder / "reference.npz", **features, **outputs,
        versions=np.array(f"torch {torch.__version__}, transformers {transformers.__version__}"))
    print(name, {key: value.shape for key, value in outputs.items()})


def write_tokenizer_reference(tokenizer, held_out):
    """Held-out lines of real text (short and long, in a stable order) and HF's ids."""
    candidates = [line for line in held_out if 10 <= len(line) <= 400]
    step = max(1, len(candidates) // TEST_LINES)
    texts = candidates[::step][:TEST_LINES]
    ids = [tokenizer(text)["input_ids"] for text in texts]
    np.savez_compressed(OUTPUT / "tokenizer.npz", texts=np.array(texts),
                        ids=np.concatenate(ids).astype(np.int16),
                        splits=np.cumsum([0] + [len(row) for row in ids]).astype(np.int32))
    print("tokenizer.npz:", len(texts), "texts")


def write_buckets():
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    relative = torch.arange(-1500, 1501)
    buckets = make_log_bucket_position(relative, 256, 512).long()
    np.savez_compressed(OUTPUT / "buckets.npz", relative=relative.numpy().astype(np.int32),
                        buckets=buckets.numpy().astype(np.int16))


def write_param_counts():
    counts = {}
    sizes = {"deberta_v3_xsmall": {"hidden_size": 384, "num_hidden_layers": 12,
                                   "num_attention_heads": 6, "intermediate_size": 1536},
             "deberta_v3_small": {"hidden_size": 768, "num_hidden_layers": 6,
                                  "num_attention_heads": 12, "intermediate_size": 3072},
             "deberta_v3_base": {"hidden_size": 768, "num_hidden_layers": 12,
                                 "num_attention_heads": 12, "intermediate_size": 3072},
             "deberta_v3_large": {"hidden_size": 1024, "num_hidden_layers": 24,
                                  "num_attention_heads": 16, "intermediate_size": 4096}}
    for name, values in sizes.items():
        values = {**V3, "vocab_size": 128100, "position_buckets": 256,
                  "max_relative_positions": -1, **values}
        with torch.device("meta"):
            model = transformers.DebertaV2Model(transformers.DebertaV2Config(**values))
        counts[name] = {"model_class": "DebertaV2Model",
                        "num_parameters": model.num_parameters(), "config": values}
        print(f"{name}: {counts[name]['num_parameters']:,} parameters")
    (OUTPUT / "param_counts.json").write_text(json.dumps(counts, indent=2) + "\n")


def main():
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    scratch = OUTPUT / "tokenizer"
    scratch.mkdir(parents=True)
    train, held_out = corpora()
    tokenizer = train_tokenizer(scratch, train)
    common = dict(V3, vocab_size=TABLE_ROWS, hidden_size=16, num_attention_heads=2,
                  intermediate_size=32, initializer_range=0.2, pad_token_id=0)
    torch.manual_seed(1)
    mlm = transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(
        **common, num_hidden_layers=3, position_buckets=16, max_relative_positions=64,
        legacy=False))
    long_text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split()[:70])
    write_model("mlm", mlm, tokenizer, scratch, 1, long_text=long_text)
    torch.manual_seed(2)
    classifier = transformers.DebertaV2ForSequenceClassification(transformers.DebertaV2Config(
        **common, num_hidden_layers=2, position_buckets=256, max_relative_positions=-1,
        num_labels=3))
    write_model("classifier", classifier, tokenizer, None, 2)
    write_tokenizer_reference(tokenizer, held_out)
    shutil.rmtree(scratch)
    write_buckets()
    write_param_counts()
    total = sum(p.stat().st_size for p in OUTPUT.rglob("*") if p.is_file())
    print(f"wrote {OUTPUT}: {total / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
