"""Write small, real Hugging Face checkpoints of RoBERTa, ALBERT and DistilBERT for the tests.

Their published weights cannot be downloaded in the tests, so this builds tiny randomly
initialized models of each family with PyTorch `transformers`, saves them with
`save_pretrained` (config.json, model.safetensors and the tokenizer files, as a user's folder
would hold them) and runs them to store reference outputs. Tokenizers are trained on the Python
standard library's docstrings (like `tests/text/make_bpe_fixture.py`): a byte-level BPE for
RoBERTa, a SentencePiece unigram model for ALBERT, a WordPiece vocabulary for DistilBERT.

It writes `tests/checkpoints/data/families/`:

    roberta/                RobertaForMaskedLM
    roberta_classifier/     RobertaForSequenceClassification (3 labels)
    albert/                 AlbertForPreTraining (MLM and sentence-order heads)
    albert_groups/          AlbertModel with 2 layer groups over 4 layers
    albert_classifier/      AlbertForSequenceClassification (3 labels)
    distilbert/             DistilBertForMaskedLM
    distilbert_classifier/  DistilBertForSequenceClassification (3 labels)
    param_counts.json       parameter counts of the published base models, with their configs

Each folder's `reference.npz` holds the texts (`texts_a`, and `texts_b` for pairs, '' for a
single text), the Hugging Face tokenizer's `input_ids`, `attention_mask` and `token_type_ids`
(zeros for RoBERTa and DistilBERT, whose tokenizers return none) for 8 single texts then 4
pairs padded to one width, and float32 outputs: `sequence_output`, `pooled_output` (where the
base model has a pooler), `mlm_logits`, `sop_logits` and `logits` (classifiers) as the model
has them. Only real-token positions of `sequence_output` are kept, flattened in row-major
order of `attention_mask`. `mlm_logits` are kept at `mlm_positions` only ((row, column) pairs
in row-major order: every 8th real token and every mask token), since the head works position
by position and a full vocabulary row per token would make the fixtures megabytes. Both keep
full float32 precision.

It needs torch, transformers, tokenizers and sentencepiece (the `bench` extra and
sentencepiece); the test suite never imports it. Run it again only to change the fixtures:

    .venv/bin/python tests/checkpoints/make_family_fixtures.py
"""

import io
import json
import pathlib
import shutil
import tempfile

import numpy as np
import sentencepiece
import tokenizers
import torch
import transformers

from keras_bert_core.cli.demo_corpus import read_docstrings

OUTPUT = pathlib.Path(__file__).with_name("data") / "families"
VOCAB_SIZE = 1000
MAX_LENGTH = 64
NUM_LABELS = 3
MLM_EVERY = 8

# Varied on purpose: accents, CJK, emoji, whitespace runs, a long word, the mask token, and one
# text long enough for 30+ tokens. "{mask}" becomes each family's mask token.
SINGLES = [
    "Hello world!",
    "Café, naïve, résumé: ÀÉÎ accents.",
    "東京は日本の首都です。",
    "Emoji 😀 and 🚀 in text.",
    "tabs\tand   runs of    spaces\n\nand newlines",
    "Supercalifragilisticexpialidocious",
    "Return the {mask} of the list.",
    "Return a new list of the items in the sequence, raising ValueError if the value is not "
    "found; the default is None, and a negative index counts from the end of the list.",
]
PAIRS = [
    ("How is the file opened?", "With open(), in text mode by default."),
    ("Is the {mask} thread-safe?", "No; use a lock."),
    ("Ünïcödé?", "日本語 text 😀."),
    ("a", "b"),
]


def corpus():
    return [d.text for d in read_docstrings()]


def train_byte_level_bpe(folder, texts):
    """vocab.json and merges.txt with RoBERTa's special-token layout: <s>, <pad>, </s>, <unk>
    first and <mask> last."""
    bpe = tokenizers.ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(texts, vocab_size=VOCAB_SIZE - 1, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                            show_progress=False)
    bpe.save_model(str(folder))
    vocab_path = folder / "vocab.json"
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    vocab["<mask>"] = len(vocab)
    vocab_path.write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    # roberta-base's <mask> swallows the space before it, so "a <mask>" predicts " word".
    mask = tokenizers.AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False,
                                 special=True)
    return transformers.RobertaTokenizer.from_pretrained(
        str(folder), mask_token=mask, model_max_length=MAX_LENGTH)


def train_sentencepiece(folder, texts):
    """spiece.model with ALBERT's ids: <pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4, trained on
    lowercased text as ALBERT's was."""
    lines = [line.strip().lower() for text in texts for line in text.splitlines()]
    model = io.BytesIO()  # not a model_prefix, which would store the scratch path in it
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([line for line in lines if line]), model_writer=model,
        vocab_size=VOCAB_SIZE, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        # Without the NFKC table sentencepiece embeds by default (a quarter of a megabyte in
        # spiece.model and again in tokenizer.json); transformers' AlbertTokenizer applies
        # NFKD, accent stripping and lowercasing itself.
        normalization_rule_name="identity",
        num_threads=1, minloglevel=2)
    (folder / "spiece.model").write_bytes(model.getvalue())
    # transformers builds its Unigram tokenizer from the spiece.model in the folder.
    return transformers.AlbertTokenizer.from_pretrained(str(folder),
                                                        model_max_length=MAX_LENGTH)


def train_wordpiece(folder, texts):
    """vocab.txt, lowercase, with [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4."""
    wordpiece = tokenizers.BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(texts, vocab_size=VOCAB_SIZE, min_frequency=2,
                                  show_progress=False)
    vocab = wordpiece.get_vocab()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert [vocab[token] for token in special] == list(range(len(special)))
    # The trainer orders tokens of equal counts differently from run to run; WordPiece's
    # longest-match-first needs only the set, so a sorted file is the same vocabulary.
    rest = sorted(set(vocab) - set(special), key=lambda token: (token.startswith("##"), token))
    (folder / "vocab.txt").write_text("\n".join(special + rest) + "\n", encoding="utf-8")
    return transformers.DistilBertTokenizer.from_pretrained(str(folder),
                                                            model_max_length=MAX_LENGTH)


def perturb(model, seed):
    """Random LayerNorm scales and biases, so a dropped bias or a wrong LayerNorm shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(0.5 + torch.rand(module.weight.shape, generator=generator))
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))


def encode(tokenizer, with_token_types, singles=SINGLES, pairs=PAIRS):
    """The batch the reference outputs are computed on: singles then pairs, one width (the
    last single text at least 30 tokens long)."""
    mask = tokenizer.mask_token
    singles = [text.format(mask=mask) for text in singles]
    pairs = [(a.format(mask=mask), b.format(mask=mask)) for a, b in pairs]
    # transformers 5's AlbertTokenizer leaves token_type_ids out unless asked for them.
    options = {"return_token_type_ids": True} if with_token_types else {}
    lengths = [len(ids) for ids in tokenizer(singles, **options)["input_ids"]]
    lengths += [len(ids) for ids in tokenizer([a for a, _ in pairs], [b for _, b in pairs],
                                              **options)["input_ids"]]
    width = max(lengths)
    assert width <= MAX_LENGTH, width
    assert lengths[len(singles) - 1] >= 30, lengths
    batches = [
        tokenizer(singles, padding="max_length", max_length=width, return_tensors="np",
                  **options),
        tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding="max_length",
                  max_length=width, return_tensors="np", **options),
    ]
    features = {}
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        values = [batch[key] if key in batch else np.zeros_like(batch["input_ids"])
                  for batch in batches]
        features[key] = np.concatenate(values).astype(np.int32)
    features["texts_a"] = np.array(singles + [a for a, _ in pairs])
    features["texts_b"] = np.array([""] * len(singles) + [b for _, b in pairs])
    return features


def mlm_positions(features, mask_token_id):
    """(row, column) of every MLM_EVERY-th real token and of every mask token."""
    rows, columns = np.nonzero(features["attention_mask"])
    keep = np.arange(len(rows)) % MLM_EVERY == 0
    keep |= features["input_ids"][rows, columns] == mask_token_id
    return np.stack([rows[keep], columns[keep]], axis=1).astype(np.int32)


def run_model(model, features, positions):
    """The outputs of `model` on the encoded batch, as float32 numpy arrays."""
    inputs = {"input_ids": torch.from_numpy(features["input_ids"]).long(),
              "attention_mask": torch.from_numpy(features["attention_mask"]).long()}
    if model.config.model_type != "distilbert":
        inputs["token_type_ids"] = torch.from_numpy(features["token_type_ids"]).long()
    real = features["attention_mask"].astype(bool)
    rows, columns = positions[:, 0], positions[:, 1]
    outputs = {}
    with torch.no_grad():
        base = model.base_model(**inputs)
        outputs["sequence_output"] = base.last_hidden_state.numpy()[real]
        if getattr(base, "pooler_output", None) is not None:
            outputs["pooled_output"] = base.pooler_output.numpy()
        if model is not model.base_model:
            head = model(**inputs, output_hidden_states=True)
            # The head model's own last hidden state must be the base model's.
            np.testing.assert_array_equal(head.hidden_states[-1].numpy()[real],
                                          outputs["sequence_output"])
            if hasattr(head, "prediction_logits"):
                outputs["mlm_logits"] = head.prediction_logits.numpy()[rows, columns]
                outputs["sop_logits"] = head.sop_logits.numpy()
            elif head.logits.ndim == 3:
                outputs["mlm_logits"] = head.logits.numpy()[rows, columns]
            else:
                outputs["logits"] = head.logits.numpy()
    return {key: value.astype(np.float32) for key, value in outputs.items()}


def write_checkpoint(name, model_class, config, tokenizer_folder, seed):
    folder = OUTPUT / name
    for source in tokenizer_folder.iterdir():
        shutil.copy(source, folder / source.name)
    torch.manual_seed(seed)
    model = model_class(config)
    perturb(model, seed)
    model.eval()
    model.save_pretrained(str(folder))

    # Everything below reads the folder back, as a user (and the test suite) would.
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    reloaded = model_class.from_pretrained(str(folder)).eval()
    features = encode(tokenizer, with_token_types=config.model_type == "albert")
    positions = mlm_positions(features, tokenizer.mask_token_id)
    outputs = run_model(reloaded, features, positions)
    # The saved weights must give what the model in memory gave.
    for key, value in run_model(model, features, positions).items():
        np.testing.assert_allclose(outputs[key], value, rtol=0, atol=1e-6, err_msg=key)
    if "mlm_logits" in outputs:
        outputs["mlm_positions"] = positions
    np.savez_compressed(
        folder / "reference.npz", **features, **outputs,
        versions=np.array(f"torch {torch.__version__}, transformers {transformers.__version__}"))
    shapes = ", ".join(f"{key} {list(value.shape)}" for key, value in outputs.items())
    print(f"{name}: {type(tokenizer).__name__}, {shapes}")


def write_tokenizer(folder, tokenizer, vocab_files):
    """The tokenizer files of a family's checkpoints: the vocabulary files it was trained to
    and what `save_pretrained` writes beside them."""
    tokenizer.save_pretrained(str(folder))
    unk = tokenizer.unk_token_id
    ids = tokenizer("the value of the list")["input_ids"]
    assert unk not in ids, tokenizer.convert_ids_to_tokens(ids)
    for vocab_file in vocab_files:
        assert (folder / vocab_file).exists(), vocab_file


def published_configs():
    """The published base models' configurations (their config.json values)."""
    roberta = {"vocab_size": 50265, "max_position_embeddings": 514, "type_vocab_size": 1,
               "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0,
               "eos_token_id": 2, "hidden_act": "gelu"}
    albert = {"vocab_size": 30000, "embedding_size": 128, "max_position_embeddings": 512,
              "type_vocab_size": 2, "num_hidden_groups": 1, "inner_group_num": 1,
              "hidden_act": "gelu_new", "hidden_dropout_prob": 0.0,
              "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-12,
              "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}

    def size(layers, hidden, heads, intermediate):
        return {"num_hidden_layers": layers, "hidden_size": hidden,
                "num_attention_heads": heads, "intermediate_size": intermediate}

    return {
        "bert_base": ("bert", "BertModel", {
            "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
            "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0,
            **size(12, 768, 12, 3072)}),
        "roberta_base": ("roberta", "RobertaModel", {**roberta, **size(12, 768, 12, 3072)}),
        "roberta_large": ("roberta", "RobertaModel", {**roberta, **size(24, 1024, 16, 4096)}),
        "albert_base": ("albert", "AlbertModel", {**albert, **size(12, 768, 12, 3072)}),
        "albert_large": ("albert", "AlbertModel", {**albert, **size(24, 1024, 16, 4096)}),
        "albert_xlarge": ("albert", "AlbertModel", {**albert, **size(24, 2048, 16, 8192)}),
        "albert_xxlarge": ("albert", "AlbertModel", {**albert, **size(12, 4096, 64, 16384)}),
        "distilbert_base": ("distilbert", "DistilBertModel", {
            "vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False,
            "n_layers": 6, "n_heads": 12, "dim": 768, "hidden_dim": 3072, "activation": "gelu",
            "pad_token_id": 0}),
    }


def write_param_counts():
    counts = {}
    for name, (model_type, class_name, values) in published_configs().items():
        config = transformers.AutoConfig.for_model(model_type, **values)
        # On the meta device the large models take no memory.
        with torch.device("meta"):
            model = getattr(transformers, class_name)(config)
        counts[name] = {"model_class": class_name,
                        "num_parameters": model.num_parameters(),
                        "config": {"model_type": model_type, **values}}
        print(f"{name}: {counts[name]['num_parameters']:,} parameters")
    path = OUTPUT / "param_counts.json"
    path.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")


def main():
    texts = corpus()
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    names = ["roberta", "roberta_classifier", "albert", "albert_groups", "albert_classifier",
             "distilbert", "distilbert_classifier"]
    for name in names:
        (OUTPUT / name).mkdir(parents=True)

    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        for family in ("roberta", "albert", "distilbert"):
            (scratch / family).mkdir()

        roberta = train_byte_level_bpe(scratch / "roberta", texts)
        write_tokenizer(scratch / "roberta", roberta, ["vocab.json", "merges.txt"])
        roberta_config = dict(
            vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=MAX_LENGTH + 2, type_vocab_size=1,
            layer_norm_eps=1e-5, pad_token_id=roberta.pad_token_id,
            bos_token_id=roberta.cls_token_id, eos_token_id=roberta.sep_token_id,
            initializer_range=0.1, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        write_checkpoint("roberta", transformers.RobertaForMaskedLM,
                         transformers.RobertaConfig(**roberta_config), scratch / "roberta", 1)
        write_checkpoint("roberta_classifier", transformers.RobertaForSequenceClassification,
                         transformers.RobertaConfig(**roberta_config, num_labels=NUM_LABELS),
                         scratch / "roberta", 2)

        albert = train_sentencepiece(scratch / "albert", texts)
        write_tokenizer(scratch / "albert", albert, ["spiece.model"])
        albert_config = dict(
            vocab_size=VOCAB_SIZE, embedding_size=16, hidden_size=32, num_hidden_layers=3,
            num_hidden_groups=1, inner_group_num=1, num_attention_heads=4,
            intermediate_size=64, hidden_act="gelu_new", max_position_embeddings=MAX_LENGTH,
            type_vocab_size=2, pad_token_id=albert.pad_token_id,
            bos_token_id=albert.cls_token_id, eos_token_id=albert.sep_token_id,
            initializer_range=0.1, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        write_checkpoint("albert", transformers.AlbertForPreTraining,
                         transformers.AlbertConfig(**albert_config), scratch / "albert", 3)
        groups_config = {**albert_config, "num_hidden_layers": 4, "num_hidden_groups": 2}
        write_checkpoint("albert_groups", transformers.AlbertModel,
                         transformers.AlbertConfig(**groups_config), scratch / "albert", 4)
        write_checkpoint("albert_classifier", transformers.AlbertForSequenceClassification,
                         transformers.AlbertConfig(**albert_config, num_labels=NUM_LABELS),
                         scratch / "albert", 5)

        distilbert = train_wordpiece(scratch / "distilbert", texts)
        write_tokenizer(scratch / "distilbert", distilbert, ["vocab.txt"])
        distilbert_config = dict(
            vocab_size=VOCAB_SIZE, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
            max_position_embeddings=MAX_LENGTH, activation="gelu",
            pad_token_id=distilbert.pad_token_id, initializer_range=0.1, dropout=0.1,
            attention_dropout=0.1)
        write_checkpoint("distilbert", transformers.DistilBertForMaskedLM,
                         transformers.DistilBertConfig(**distilbert_config),
                         scratch / "distilbert", 6)
        write_checkpoint("distilbert_classifier",
                         transformers.DistilBertForSequenceClassification,
                         transformers.DistilBertConfig(**distilbert_config,
                                                       num_labels=NUM_LABELS),
                         scratch / "distilbert", 7)

    write_param_counts()
    total = sum(p.stat().st_size for p in OUTPUT.rglob("*") if p.is_file())
    print(f"wrote {OUTPUT}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
