"""Writes tests/text/data/bpe/vocab.json and merges.txt: a small real byte-level BPE vocabulary.

RoBERTa's files cannot be downloaded in the tests, so this trains one of the same kind with
Hugging Face `tokenizers` (`ByteLevelBPETokenizer`: GPT-2 pre-tokenization, all 256 byte
symbols in the vocabulary, RoBERTa's special tokens first) on the Python standard library's
docstrings, which every Python installation has.

Run it again only to change the fixture: `python tests/text/make_bpe_fixture.py`.
"""

import pathlib

from keras_bert_core.cli.demo_corpus import read_docstrings

OUTPUT = pathlib.Path(__file__).with_name("data") / "bpe"
VOCAB_SIZE = 2000
# RoBERTa's special tokens, with its ids (0-3; <mask> is last in RoBERTa, 4 here).
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def main():
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer(add_prefix_space=False)
    tokenizer.train_from_iterator(
        (d.text for d in read_docstrings()),
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    OUTPUT.mkdir(parents=True, exist_ok=True)
    tokenizer.save_model(str(OUTPUT))
    sizes = {p.name: p.stat().st_size for p in sorted(OUTPUT.iterdir())}
    print(f"{tokenizer.get_vocab_size()} tokens written to {OUTPUT}: {sizes}")


if __name__ == "__main__":
    main()
