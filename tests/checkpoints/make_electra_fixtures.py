"""Write small, real Hugging Face ELECTRA checkpoints for the tests, as
make_family_fixtures.py (beside this file) does for RoBERTa, ALBERT and DistilBERT, whose
tokenizer training, test texts, perturbation and reference outputs it reuses.

It writes `tests/checkpoints/data/electra/`:

    discriminator/   ElectraForPreTraining (16-wide tables projected to 32-wide blocks);
                     `logits` are the replaced-token scores [batch, seq]
    generator/       ElectraForMaskedLM (16-wide tables projected to 24-wide blocks)
    classifier/      ElectraForSequenceClassification (3 labels)
    param_counts.json  ElectraModel's parameter counts of the published discriminators

with a WordPiece vocabulary (vocab.txt) and the reference.npz of make_family_fixtures.py.
Run it with the reference environment (torch, transformers, tokenizers):

    /work/refvenv/bin/python tests/checkpoints/make_electra_fixtures.py
"""

import json
import pathlib
import shutil
import sys
import tempfile

import torch
import transformers

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import make_family_fixtures as families  # noqa: E402

OUTPUT = pathlib.Path(__file__).with_name("data") / "electra"
# The published discriminators' config.json values (google/electra-*-discriminator).
_PUBLISHED = {
    "electra_small": dict(embedding_size=128, hidden_size=256, num_hidden_layers=12,
                          num_attention_heads=4, intermediate_size=1024),
    "electra_base": dict(embedding_size=768, hidden_size=768, num_hidden_layers=12,
                         num_attention_heads=12, intermediate_size=3072),
    "electra_large": dict(embedding_size=1024, hidden_size=1024, num_hidden_layers=24,
                          num_attention_heads=16, intermediate_size=4096),
}


def write_param_counts():
    counts = {}
    for name, values in _PUBLISHED.items():
        values = {"vocab_size": 30522, "hidden_act": "gelu", **values}
        with torch.device("meta"):
            model = transformers.ElectraModel(transformers.ElectraConfig(**values))
        counts[name] = {"model_class": "ElectraModel", "num_parameters": model.num_parameters(),
                        "config": {"model_type": "electra", **values}}
        print(f"{name}: {counts[name]['num_parameters']:,} parameters")
    (OUTPUT / "param_counts.json").write_text(json.dumps(counts, indent=2) + "\n",
                                              encoding="utf-8")


def main():
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    families.OUTPUT = OUTPUT  # write_checkpoint writes under it
    for name in ("discriminator", "generator", "classifier"):
        (OUTPUT / name).mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        families.train_wordpiece(scratch, families.corpus())
        tokenizer = transformers.ElectraTokenizer.from_pretrained(
            str(scratch), model_max_length=families.MAX_LENGTH)
        families.write_tokenizer(scratch, tokenizer, ["vocab.txt"])
        sizes = dict(vocab_size=families.VOCAB_SIZE, embedding_size=16,
                     max_position_embeddings=families.MAX_LENGTH, type_vocab_size=2,
                     pad_token_id=tokenizer.pad_token_id, initializer_range=0.1)
        discriminator = dict(sizes, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64)
        generator = dict(sizes, hidden_size=24, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=48)
        families.write_checkpoint("discriminator", transformers.ElectraForPreTraining,
                                  transformers.ElectraConfig(**discriminator), scratch, 11)
        families.write_checkpoint("generator", transformers.ElectraForMaskedLM,
                                  transformers.ElectraConfig(**generator), scratch, 12)
        families.write_checkpoint(
            "classifier", transformers.ElectraForSequenceClassification,
            transformers.ElectraConfig(**discriminator, num_labels=families.NUM_LABELS),
            scratch, 13)
    write_param_counts()
    total = sum(p.stat().st_size for p in OUTPUT.rglob("*") if p.is_file())
    print(f"wrote {OUTPUT}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
