"""Write a small, real Hugging Face XLM-RoBERTa checkpoint for the tests.

XLM-R's published weights and its 250,002-id `sentencepiece.bpe.model` cannot be downloaded
in the tests, so this trains a SentencePiece unigram model of the same kind (fairseq's
layout: `<unk>`, `<s>`, `</s>` first) on multilingual text found on this machine: the
translated messages of its installed programs (gettext catalogs under /usr/share/locale, in
18 languages and 12 scripts) and the Python standard library's docstrings. Its normalizer
is NFKC restricted to the corpus's characters (plus tabs, newlines and wide spaces to a
space), a precompiled character map as XLM-R's `nmt_nfkc` is, but a few hundred bytes
instead of a quarter of a megabyte. `transformers`' `XLMRobertaTokenizerFast` reads the
folder; a tiny random `XLMRobertaForMaskedLM` is saved with `save_pretrained` and run to
store reference outputs.

It writes `tests/checkpoints/data/xlm_roberta/`:

    mlm/                XLMRobertaForMaskedLM (2 layers): config.json, model.safetensors,
                        sentencepiece.bpe.model, tokenizer.json, tokenizer_config.json
    mlm/reference.npz   as make_family_fixtures.py's (texts_a/texts_b, the tokenizer's
                        input_ids and attention_mask, sequence_output, pooled_output-free,
                        mlm_logits at mlm_positions), plus an XLMRobertaForSequenceClassification
                        head on the same encoder: its weights (`classifier_*`) and `logits`
    tokenizer_ids.npz   HF's ids for `texts` (flat `ids`, `lengths`), and `ties`: the texts
                        where HF's Unigram orders equally scored pieces differently from the
                        `sentencepiece` library (checked here: the same total score)
    param_counts.json   parameter counts of XLM-R base and large (transformers' configs)

Run it under the reference venv (torch, transformers 5, sentencepiece) from the repository
root; the test suite never imports it:

    PYTHONPATH=. /work/refvenv/bin/python tests/checkpoints/make_xlm_roberta_fixtures.py
"""

import gettext
import io
import json
import pathlib
import shutil
import tempfile
import unicodedata

import numpy as np
import sentencepiece
import torch
import transformers

from tests.checkpoints.make_family_fixtures import (
    corpus,
    encode,
    mlm_positions,
    perturb,
    run_model,
)

OUTPUT = pathlib.Path(__file__).with_name("data") / "xlm_roberta"
LOCALES = pathlib.Path("/usr/share/locale")
LANGUAGES = ("de", "fr", "es", "it", "pt_BR", "pl", "tr", "vi", "ru", "uk", "el", "ar", "he",
             "hi", "th", "ja", "ko", "zh_CN")
CATALOGS_PER_LANGUAGE = 4
SPM_SIZE = 800
MAX_LENGTH = 64
NUM_LABELS = 3
TOKENIZER_TEXTS_PER_LANGUAGE = 12
TOKENIZER_DOCSTRING_LINES = 60
# Where normalizers, whitespace and unknown characters matter.
EDGE_TEXTS = ["", " ", "  lead  and trail  ", "a\tb\nc\r\nd", "ﬁ ﬃ ² ½ ™ ＡＢＣ １２３ ！",
              "x\u00a0y\u3000z", "e\u0301te\u0301 café naïve", "Σσς ΌΣΟΣ", "``q'' \"r\"",
              "東京 😀 🚀 ☃", "ab  \u3000 cd\u2003e", "Straße İstanbul",
              "+---------------+-------------------+"]
SINGLES = [
    "Hello world!",
    "Datei nicht gefunden: {mask}",
    "Le fichier est introuvable.",
    "Файл не найден.",
    "ファイルが見つかりません。",
    "文件未找到",
    "파일을 찾을 수 없습니다",
    "Return a new list of the items in the sequence, raising ValueError if the value is not "
    "found; the default is None.",
]
PAIRS = [("¿Dónde está el archivo?", "En el directorio actual."),
         ("Is the {mask} thread-safe?", "Nein; verwenden Sie eine Sperre."),
         ("a", "b")]


def translations():
    """The translated messages of the first few gettext catalogs of each language."""
    lines = []
    for language in LANGUAGES:
        catalogs = sorted((LOCALES / language / "LC_MESSAGES").glob("*.mo"))
        for path in catalogs[:CATALOGS_PER_LANGUAGE]:
            with path.open("rb") as f:
                messages = gettext.GNUTranslations(f)._catalog  # msgid -> msgstr
            for key in sorted(messages, key=str):
                message = messages[key]
                if key and isinstance(message, str):
                    lines.extend(line.strip() for line in message.splitlines() if line.strip())
    if not lines:
        raise SystemExit(f"no gettext catalogs under {LOCALES}: install some translations")
    return lines


def normalization_rules(texts):
    """NFKC of every character the texts (and EDGE_TEXTS) hold that NFKC changes, and
    whitespace to a space, as sentencepiece's rule TSV."""
    chars = sorted({c for text in [*texts, *EDGE_TEXTS] for c in text})
    rules = {c: unicodedata.normalize("NFKC", c) for c in chars}
    rules.update({c: " " for c in chars if c.isspace()})
    return "".join(f"{ord(c):X}\t{' '.join(f'{ord(x):X}' for x in out)}\n"
                   for c, out in sorted(rules.items()) if out != c)


def train_sentencepiece(folder, lines):
    with tempfile.TemporaryDirectory() as scratch:
        rules = pathlib.Path(scratch) / "rules.tsv"
        rules.write_text(normalization_rules(lines), encoding="utf-8")
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, vocab_size=SPM_SIZE,
            model_type="unigram", character_coverage=0.98, normalization_rule_tsv=str(rules),
            num_threads=1, minloglevel=2)
    (folder / "sentencepiece.bpe.model").write_bytes(model.getvalue())
    tokenizer = transformers.XLMRobertaTokenizerFast.from_pretrained(
        str(folder), model_max_length=MAX_LENGTH)
    tokenizer.save_pretrained(str(folder))
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    return transformers.AutoTokenizer.from_pretrained(str(folder))


def tokenizer_ids(folder, tokenizer, translated, docstrings):
    """HF's ids of a sample of the corpus, and which texts are ties (see the docstring)."""
    step = max(1, len(translated) // (TOKENIZER_TEXTS_PER_LANGUAGE * len(LANGUAGES)))
    texts = translated[::step] + docstrings[:: max(1, len(docstrings)
                                                    // TOKENIZER_DOCSTRING_LINES)]
    # HF reads its special tokens in text; the package never does (nor do users' texts).
    texts = [t for t in texts + EDGE_TEXTS if not any(
        token in t for token in ("<s>", "</s>", "<pad>", "<unk>", "<mask>"))]
    model = sentencepiece.SentencePieceProcessor(
        model_file=str(folder / "sentencepiece.bpe.model"))
    ids = [tokenizer(text)["input_ids"] for text in texts]
    ties = []
    for i, (text, theirs) in enumerate(zip(texts, ids, strict=True)):
        library = [0] + [3 if x == 0 else x + 1 for x in model.encode(text)] + [2]
        if library != theirs:
            def score(fairseq_ids):
                return sum(model.get_score(x - 1) for x in fairseq_ids[1:-1])
            assert abs(score(library) - score(theirs)) < 1e-4, (text, library, theirs)
            ties.append(i)
    print(f"tokenizer: {len(texts)} texts, {len(ties)} ties")
    np.savez_compressed(OUTPUT / "tokenizer_ids.npz", texts=np.array(texts),
                        ids=np.concatenate(ids).astype(np.int32),
                        lengths=np.array([len(x) for x in ids], np.int32),
                        ties=np.array(ties, np.int32))


def write_checkpoint(folder, tokenizer):
    config = transformers.XLMRobertaConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_LENGTH + 2, type_vocab_size=1,
        layer_norm_eps=1e-5, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
        initializer_range=0.1, num_labels=NUM_LABELS)
    torch.manual_seed(1)
    model = transformers.XLMRobertaForMaskedLM(config)
    perturb(model, 1)
    model.eval().save_pretrained(str(folder))
    model = transformers.XLMRobertaForMaskedLM.from_pretrained(str(folder)).eval()
    features = encode(tokenizer, False, SINGLES, PAIRS)
    positions = mlm_positions(features, tokenizer.mask_token_id)
    outputs = run_model(model, features, positions)
    # A classification head on the same encoder (RoBERTa's: dense, tanh, out_proj).
    torch.manual_seed(2)
    classifier = transformers.XLMRobertaForSequenceClassification(config)
    classifier.roberta.load_state_dict(model.roberta.state_dict(), strict=False)
    perturb(classifier.classifier, 2)
    classifier.eval()
    head = run_model(classifier, features, positions)
    np.testing.assert_allclose(head["sequence_output"], outputs["sequence_output"], atol=1e-6)
    weights = {f"classifier_{name.replace('.', '_')}": value.numpy().astype(np.float32)
               for name, value in classifier.classifier.state_dict().items()}
    np.savez_compressed(
        folder / "reference.npz", **features, **outputs, mlm_positions=positions,
        logits=head["logits"], **weights,
        versions=np.array(f"torch {torch.__version__}, transformers {transformers.__version__}"))
    print("mlm:", {key: value.shape for key, value in outputs.items()})


def write_param_counts():
    counts = {}
    sizes = {"xlm_roberta_base": (12, 768, 12, 3072), "xlm_roberta_large": (24, 1024, 16, 4096)}
    for name, (layers, hidden, heads, intermediate) in sizes.items():
        values = {"vocab_size": 250002, "max_position_embeddings": 514, "type_vocab_size": 1,
                  "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0,
                  "eos_token_id": 2, "hidden_act": "gelu", "num_hidden_layers": layers,
                  "hidden_size": hidden, "num_attention_heads": heads,
                  "intermediate_size": intermediate}
        with torch.device("meta"):
            model = transformers.XLMRobertaModel(transformers.XLMRobertaConfig(**values))
        counts[name] = {"model_class": "XLMRobertaModel",
                        "num_parameters": model.num_parameters(),
                        "config": {"model_type": "xlm-roberta", **values}}
        print(f"{name}: {counts[name]['num_parameters']:,} parameters")
    (OUTPUT / "param_counts.json").write_text(json.dumps(counts, indent=2) + "\n")


def main():
    translated = translations()
    docstrings = [line.strip() for text in corpus() for line in text.splitlines()
                  if line.strip()]
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    folder = OUTPUT / "mlm"
    folder.mkdir(parents=True)
    tokenizer = train_sentencepiece(folder, translated + docstrings)
    assert len(tokenizer) == SPM_SIZE + 2 and tokenizer.mask_token_id == SPM_SIZE + 1
    tokenizer_ids(folder, tokenizer, translated, docstrings)
    write_checkpoint(folder, tokenizer)
    write_param_counts()
    total = sum(p.stat().st_size for p in OUTPUT.rglob("*") if p.is_file())
    print(f"wrote {OUTPUT}: {total / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
