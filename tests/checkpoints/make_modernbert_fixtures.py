"""Write small, real Hugging Face ModernBERT checkpoints for the tests.

The published weights cannot be downloaded in the tests, so this builds tiny randomly
initialized ModernBERT models with PyTorch `transformers`, saves them with `save_pretrained`
(config.json, model.safetensors, and a byte-level BPE trained with HF `tokenizers` on the
repository's Python sources, held in `tokenizer.json` alone with ModernBERT's special tokens
[UNK] [CLS] [SEP] [PAD] [MASK] after the BPE's tokens and its `[CLS] A [SEP] B [SEP]`
template), and runs them to store reference outputs. Four layers with a 16-token window and
a global layer every third make layers 0 and 3 global and 1 and 2 local, and the long text
spans dozens of windows.

It writes `tests/checkpoints/data/modernbert/`:

    mlm/                ModernBertForMaskedLM (4 layers), with the tokenizer files
    classifier/         ModernBertForSequenceClassification (3 layers, mean pooling, 3 labels)
    param_counts.json   parameter counts of ModernBERT-base and -large (transformers' configs)

Each folder's `reference.npz` holds `texts_a`/`texts_b` ('' for single texts), the tokenizer's
`input_ids` and `attention_mask` for 5 single texts then 3 pairs padded to one width, the
base model's `sequence_output` at the real positions (row-major), and the head's outputs:
`mlm_logits` at `mlm_positions` (every 12th real token and every [MASK]) or `logits`. The mlm
folder also holds a text of more than 1,000 tokens: `long_text`, `long_input_ids`, and
`long_sequence_output` at `long_positions` (every 9th position and the last), so the fixture
stays small.

Run it under the reference venv (torch, transformers 5, tokenizers); the test suite never
imports it:

    /work/refvenv/bin/python tests/checkpoints/make_modernbert_fixtures.py
"""

import json
import pathlib
import shutil

import numpy as np
import tokenizers
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = pathlib.Path(__file__).with_name("data") / "modernbert"
BPE_SIZE = 500  # the BPE's own tokens, special tokens after them
SPECIAL = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
MLM_EVERY = 12
LONG_EVERY = 9
SINGLES = [
    "Hello world!",
    "Café, naïve, résumé: ÀÉÎ accents. 東京 😀",
    "tabs\tand   runs of    spaces\n\nand newlines",
    "Return the [MASK] of the list.",
    "Return a new list of the items in the sequence, raising ValueError if the value is not "
    "found; the default is None.",
]
PAIRS = [("How is the file opened?", "With open(), in text mode by default."),
         ("Is the [MASK] thread-safe?", "No; use a lock."),
         ("a", "b")]


def corpus():
    return [path.read_text(encoding="utf-8")
            for path in sorted((ROOT / "keras_bert_core").rglob("*.py"))]


def bert_template(ids):
    """ModernBERT's post-processor: BERT's `[CLS] A [SEP] B [SEP]`, one token type; `ids`
    maps [CLS] and [SEP] to their ids."""
    def special(token):
        return {"SpecialToken": {"id": token, "type_id": 0}}

    def sequence(name):
        return {"Sequence": {"id": name, "type_id": 0}}

    return {"type": "TemplateProcessing",
            "single": [special("[CLS]"), sequence("A"), special("[SEP]")],
            "pair": [special("[CLS]"), sequence("A"), special("[SEP]"), sequence("B"),
                     special("[SEP]")],
            "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                               for token in ("[CLS]", "[SEP]")}}


def train_tokenizer(folder):
    """tokenizer.json (+ tokenizer_config.json) as ModernBERT's: GPT-2 byte-level BPE, no
    normalizer, special tokens at the end of the vocabulary, BERT's template."""
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE())
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=BPE_SIZE, min_frequency=2, show_progress=False,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(), trainer)
    spec = json.loads(bpe.to_str())
    vocab = spec["model"]["vocab"]
    added = []
    for token in SPECIAL:
        vocab[token] = len(vocab)
        added.append({"id": vocab[token], "content": token, "single_word": False,
                      "lstrip": token == "[MASK]", "rstrip": False, "normalized": False,
                      "special": True})
    spec["added_tokens"] = added
    spec["post_processor"] = bert_template(vocab)
    fast = tokenizers.Tokenizer.from_str(json.dumps(spec))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=fast, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        pad_token="[PAD]", mask_token="[MASK]", model_max_length=8192)
    tokenizer.save_pretrained(str(folder))
    for extra in ("special_tokens_map.json",):
        (folder / extra).unlink(missing_ok=True)
    return transformers.AutoTokenizer.from_pretrained(str(folder)), len(vocab)


def perturb(model, seed):
    """Random norm scales (ModernBERT's norms are all named `*norm`) and decoder/classifier
    biases, so a wrong norm or a dropped bias shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
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


def long_text(tokenizer):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    words = text.split(" ")
    for end in range(200, len(words), 50):
        candidate = " ".join(words[:end])
        if len(tokenizer(candidate)["input_ids"]) >= 1100:
            return candidate
    raise AssertionError("README.md is too short for the long text")


def run(model, input_ids, attention_mask):
    with torch.no_grad():
        inputs = {"input_ids": torch.from_numpy(input_ids).long(),
                  "attention_mask": torch.from_numpy(attention_mask).long()}
        base = model.model(**inputs).last_hidden_state.numpy()
        head = model(**inputs).logits.numpy()
    return base.astype(np.float32), head.astype(np.float32)


def write_model(name, model, tokenizer, tokenizer_folder, seed, with_long):
    folder = OUTPUT / name
    folder.mkdir(parents=True)
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
        keep = (np.arange(len(rows)) % MLM_EVERY == 0)
        keep |= features["input_ids"][rows, columns] == tokenizer.mask_token_id
        outputs["mlm_positions"] = np.stack([rows[keep], columns[keep]], 1).astype(np.int32)
        outputs["mlm_logits"] = head[rows[keep], columns[keep]]
    else:
        outputs["logits"] = head
    if with_long:
        text = long_text(tokenizer)
        ids = np.array([tokenizer(text)["input_ids"]], np.int32)
        long_sequence, _ = run(model, ids, np.ones_like(ids))
        positions = np.unique(np.r_[np.arange(0, ids.shape[1], LONG_EVERY), ids.shape[1] - 1])
        outputs.update(long_text=np.array(text), long_input_ids=ids[0],
                       long_positions=positions.astype(np.int32),
                       long_sequence_output=long_sequence[0, positions])
    np.savez_compressed(
        folder / "reference.npz", **features, **outputs,
        versions=np.array(f"torch {torch.__version__}, transformers {transformers.__version__}"))
    print(name, {key: value.shape for key, value in outputs.items()})


def write_param_counts():
    counts = {}
    sizes = {"modernbert_base": {},
             "modernbert_large": {"hidden_size": 1024, "num_hidden_layers": 28,
                                  "num_attention_heads": 16, "intermediate_size": 2624}}
    for name, values in sizes.items():
        with torch.device("meta"):
            model = transformers.ModernBertModel(transformers.ModernBertConfig(**values))
        counts[name] = {"model_class": "ModernBertModel",
                        "num_parameters": model.num_parameters(), "config": values}
        print(f"{name}: {counts[name]['num_parameters']:,} parameters")
    (OUTPUT / "param_counts.json").write_text(json.dumps(counts, indent=2) + "\n")


def main():
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    scratch = OUTPUT / "tokenizer"
    scratch.mkdir(parents=True)
    tokenizer, size = train_tokenizer(scratch)
    common = dict(
        vocab_size=-(-size // 64) * 64, hidden_size=32, num_attention_heads=2,
        intermediate_size=48, max_position_embeddings=2048, local_attention=16,
        global_attn_every_n_layers=3, initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id, cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id, bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id)
    torch.manual_seed(1)
    mlm = transformers.ModernBertForMaskedLM(
        transformers.ModernBertConfig(**common, num_hidden_layers=4))
    write_model("mlm", mlm, tokenizer, scratch, 1, with_long=True)
    torch.manual_seed(2)
    classifier = transformers.ModernBertForSequenceClassification(
        transformers.ModernBertConfig(**common, num_hidden_layers=3, classifier_pooling="mean",
                                      num_labels=3))
    write_model("classifier", classifier, tokenizer, scratch, 2, with_long=False)
    shutil.rmtree(scratch)
    write_param_counts()
    total = sum(p.stat().st_size for p in OUTPUT.rglob("*") if p.is_file())
    print(f"wrote {OUTPUT}: {total / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
