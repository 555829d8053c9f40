"""Writes tests/text/data/sentencepiece/: a small SentencePiece unigram model as ALBERT's
(`spiece.model`) and the ids that the `sentencepiece` library gives for the test texts
after ALBERT's preprocessing (`reference_ids.npz`, `reference_texts.jsonl`), so that the
tests need neither `sentencepiece` nor `transformers`.

ALBERT's `spiece.model` cannot be downloaded in the tests, so this trains one of the same
kind with `sentencepiece`: unigram, `nmt_nfkc` normalization, ALBERT's special pieces
(`<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4), 2,000 pieces, on the Python
standard library's docstrings (which every Python installation has) plus one line per
alphabet of tests/text/make_tokenizer_corpus.py, so that the corpus's accented letters,
Greek (σ and ς), CJK, kana, Hangul, symbols and emoji are pieces rather than unknown.

The reference texts are tests/text/data/tokenizer_corpus.jsonl, edge cases of ALBERT's
preprocessing (EXTRA_LINES) and a sample of the docstrings; the ids of all four
preprocessings (lower case or not, accents kept or not) are stored, the corpus's stdlib
lines only for ALBERT's default (lower case, accents stripped), and only every 4th
generated line for the other three. With `transformers`
installed, it also prints where transformers' `AlbertTokenizer` differs from this reference.

Run it again only to change the fixture: `python tests/text/make_sentencepiece_fixture.py`.
"""

import hashlib
import io
import json
import pathlib
import sys
import tempfile
import unicodedata

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from keras_bert_core.cli.demo_corpus import read_docstrings  # noqa: E402
from tests.text import make_tokenizer_corpus  # noqa: E402
from tests.text.fuzz_texts import DATA, tokenizer_corpus  # noqa: E402

OUTPUT = DATA / "sentencepiece"
VOCAB_SIZE = 2000
# (lower_case, keep_accents) of each stored preprocessing.
CONFIGS = {"uncased": (True, False), "cased": (False, False),
           "uncased_accents": (True, True), "cased_accents": (False, True)}
DOCSTRING_SAMPLE_STEP = 40
# The other preprocessings take every 4th generated corpus line (the fixture stays small).
OTHER_CONFIGS_STEP = 4
# Beyond the corpus: quote pairs, final sigma in every context, whitespace at the ends and
# in runs, NUL, control, format and replacement characters, lone combining marks, special
# tokens and ALBERT's digit-comma pieces, compatibility characters that NFKD expands.
EXTRA_LINES = [
    "``quoted'' text", "```x''' ``` '' ` `` ' ''''' ````", "`\u0301` '\u0301' `\u1fef ＇＇",
    "ΣΑΣ σΣ Σ. ΑΣ'Σ ΑΣ''Β Σ`` χ'Σ' Σ\u0301χ ΑΣ\u0301", "ΑΣ.Α ΑΣ.. ΑΣ' ΑΣ'Α ΑΣ`Α ΑΣ``Α",
    "𝚺𝚺 ∑Σ 𝚺χ χ𝚺 ϹΣ ǅΣ ǲΣ Σǅ ΑΣ\u00adΑ ΑΣ\u200d ΑΣ\U000e0041 Α\u0345Σ",
    "", " ", "  \t lead and trail \u3000 ", "a \u00a0\u2003\u3000 b\r\n\tc\x0b\x0cd\x1c\x1fe\x85f",
    "\x00", "a\x00b\ue000c \x00\x00", "\x01\x07\x1b\x7f\x9f text\u200b\u200c\u200d\ufeff",
    "\ufffd \ufffd\ufffdx", "\u0301\u0301 x \u0301", "e\u0301te\u0301 cafe\u0301 ÉTÉ",
    "[CLS] [SEP] [MASK] <pad> <unk> ▁ ▁▁x", "1,000,000 3,14 10,5, 2,",
    "ﬁ ﬃ ㈱ ℌ ² ½ ǅ İ ß ẞ ŉ ǰ ™ … ⅷ ℡ ㍻ ﷺ", "Ａ＇＇ ＂ “quoted” ’tis", "Straße İstanbul ΌΣΟΣ",
    "a  \u00a8  b \u00b4x", "x" * 300, "word" * 80 + " " + "é" * 120,
]  # fmt: skip


def albert_preprocess(text, lower_case, keep_accents):
    """ALBERT's `preprocess_text` (its original tokenizer; transformers' slow one)."""
    text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    if lower_case:
        text = text.lower()
    return text


def training_lines():
    lines = [line.strip() for d in read_docstrings() for line in d.text.splitlines()
             if line.strip()]
    alphabets = [make_tokenizer_corpus.ACCENTED, make_tokenizer_corpus.SYMBOLS,
                 make_tokenizer_corpus.FULL_WIDTH, *make_tokenizer_corpus.SCRIPTS.values(),
                 " ".join(make_tokenizer_corpus.EMOJI)]
    return lines + alphabets


def train():
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_lines()), model_writer=model, model_type="unigram",
        vocab_size=VOCAB_SIZE, character_coverage=1.0, normalization_rule_name="nmt_nfkc",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], num_threads=1, minloglevel=2)
    return model.getvalue()


def corpus_digest(lines):
    return hashlib.sha256(json.dumps(lines, ensure_ascii=False).encode("utf-8")).hexdigest()


def reference_texts():
    docstrings = [d.text for d in read_docstrings()][::DOCSTRING_SAMPLE_STEP]
    return EXTRA_LINES + docstrings


def main():
    import sentencepiece as spm

    model = train()
    processor = spm.SentencePieceProcessor(model_proto=model)
    corpus = tokenizer_corpus()
    extra = reference_texts()
    texts = corpus + extra
    stdlib_lines = make_tokenizer_corpus.NUM_STDLIB_LINES
    arrays = {"corpus_sha256": np.array(corpus_digest(corpus)),
              "unidata_version": np.array(unicodedata.unidata_version),
              "unassigned": np.array(sorted({ord(c) for t in texts for c in t
                                             if unicodedata.category(c) == "Cn"}), np.int32)}
    for name, (lower_case, keep_accents) in CONFIGS.items():
        lines = np.arange(len(texts)) if name == "uncased" else np.concatenate(
            [np.arange(stdlib_lines, len(corpus), OTHER_CONFIGS_STEP),
             np.arange(len(corpus), len(texts))])
        ids = [processor.encode(albert_preprocess(texts[i], lower_case, keep_accents))
               for i in lines]
        arrays[f"{name}_lines"] = lines.astype(np.int32)
        arrays[f"{name}_lengths"] = np.array([len(x) for x in ids], np.int32)
        arrays[f"{name}_ids"] = np.array([i for x in ids for i in x], np.int16)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "spiece.model").write_bytes(model)
    with open(OUTPUT / "reference_texts.jsonl", "w", encoding="utf-8") as f:
        for text in extra:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
    np.savez_compressed(OUTPUT / "reference_ids.npz", **arrays)
    sizes = {p.name: p.stat().st_size for p in sorted(OUTPUT.iterdir())}
    print(f"{processor.vocab_size()} pieces, {len(texts)} texts written to {OUTPUT}: {sizes}")
    compare_with_transformers(model, texts)


def compare_with_transformers(model, texts):
    """Prints where transformers' AlbertTokenizer (loaded from a folder holding only
    spiece.model) differs from the sentencepiece reference."""
    try:
        import sentencepiece as spm
        from transformers import AlbertTokenizer
    except ImportError:
        print("transformers is not installed: no comparison with its AlbertTokenizer")
        return
    processor = spm.SentencePieceProcessor(model_proto=model)
    with tempfile.TemporaryDirectory() as folder:
        (pathlib.Path(folder) / "spiece.model").write_bytes(model)
        for name, (lower_case, keep_accents) in CONFIGS.items():
            hf = AlbertTokenizer.from_pretrained(folder, do_lower_case=lower_case,
                                                 keep_accents=keep_accents)
            differ = []
            for text in texts:
                ours = processor.encode(albert_preprocess(text, lower_case, keep_accents))
                theirs = hf(text, add_special_tokens=False)["input_ids"]
                if ours != theirs:
                    differ.append((text, ours, theirs))
            same_pieces = sum(sorted(a) == sorted(b) for _, a, b in differ)
            print(f"{name}: transformers {type(hf).__name__} differs on {len(differ)} of "
                  f"{len(texts)} texts ({same_pieces} of them the same pieces in another order)")
            for text, ours, theirs in differ[:5]:
                at = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False))
                           if a != b),
                          min(len(ours), len(theirs)))
                window = slice(max(at - 2, 0), at + 6)
                print(f"  {text[:70]!r}\n    sentencepiece {processor.id_to_piece(ours[window])}"
                      f"\n    transformers  {processor.id_to_piece(theirs[window])}")


if __name__ == "__main__":
    main()
