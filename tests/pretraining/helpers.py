"""Shared by the pretraining data tests: a corpus whose every token tells where it came
from (`write_corpus`), a dataset of it, and checks of the google-research pair rules."""

import numpy as np

from keras_bert_core.pretraining.data import pretraining_dataset

NUM_DOCS, SEQ_LENGTH, BATCH, SLOTS = 90, 32, 8, 5
# Sentence j of document i reads "di sj di sj ...": every token tells where it came from.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB += [f"d{i}" for i in range(NUM_DOCS)] + [f"s{j}" for j in range(12)]
CLS, SEP, MASK = 2, 3, 4


def make_dataset(corpus, tokenizer, seed=1, **kwargs):
    return pretraining_dataset(
        str(corpus / "part-*.txt"),
        tokenizer,
        seq_length=SEQ_LENGTH,
        max_predictions_per_seq=SLOTS,
        batch_size=BATCH,
        seed=seed,
        window_size=6,
        shuffle_buffer_size=100,
        **kwargs,
    )


def unmasked_ids(x, y, w):
    """The batch's token ids with the original ids put back at the real masked positions."""
    ids = x["token_ids"].copy()
    rows, slots = np.nonzero(w["mlm"])
    ids[rows, x["masked_positions"][rows, slots]] = y["mlm"][rows, slots]
    return ids


def unmasked_pairs(batches):
    """(tokens_a, tokens_b, label) of every example, with the masked ids put back."""
    pairs = []
    for x, y, w in batches:
        ids = unmasked_ids(x, y, w)
        assert (ids != x["token_ids"]).any()
        for r in range(len(ids)):
            tokens = ids[r][x["padding_mask"][r] == 1]
            first_sep = list(tokens).index(SEP)
            assert tokens[0] == CLS and tokens[-1] == SEP
            expected_segments = [0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1)
            assert list(x["segment_ids"][r][: len(tokens)]) == expected_segments
            pairs.append(
                (
                    [VOCAB[t] for t in tokens[1:first_sep]],
                    [VOCAB[t] for t in tokens[first_sep + 1 : -1]],
                    y["nsp"][r],
                )
            )
    return pairs


def markers(tokens, kind):
    return [int(t[1:]) for t in tokens if t[0] == kind]


def check_pairs(pairs):
    """The google-research rules, read off the tokens' document and sentence markers."""
    assert len(pairs) > 150
    for a, b, label in pairs:
        assert a and b and len(a) + len(b) <= SEQ_LENGTH - 3
        for segment in (a, b):  # Each side is one run of consecutive sentences.
            assert len(set(markers(segment, "d"))) <= 1
            assert markers(segment, "s") == sorted(markers(segment, "s"))
        docs_a, docs_b = set(markers(a, "d")), set(markers(b, "d"))
        if label == 0:
            assert not docs_a or not docs_b or docs_a == docs_b
            if markers(a, "s") and markers(b, "s"):
                assert max(markers(a, "s")) < min(markers(b, "s"))
        else:
            assert not docs_a & docs_b, "a random B comes from another document"
    labels = np.array([label for _, _, label in pairs])
    assert 0.35 < labels.mean() < 0.7
    # Truncation trims from both ends: sentences start with "d" and end with "s".
    assert any(a[0][0] == "s" for a, _, _ in pairs)
    assert any(b[-1][0] == "d" for _, b, _ in pairs)


def masked_lm_rows(batches):
    """The tokens of every masked-LM-only row, masked ids put back; checks the layout."""
    rows = []
    for x, y, w in batches:
        assert set(y) == set(w) == {"mlm"}
        ids = unmasked_ids(x, y, w)
        for r in range(len(ids)):
            tokens = ids[r][x["padding_mask"][r] == 1]
            assert tokens[0] == CLS and list(tokens).count(SEP) == 1 and tokens[-1] == SEP
            assert not x["segment_ids"][r].any()
            rows.append([VOCAB[t] for t in tokens[1:-1]])
    return rows


def write_corpus(root):
    """Three files of 30 documents each, 1-12 sentences of 2-12 tokens."""
    rng = np.random.default_rng(0)
    for f in range(3):
        docs = []
        for i in range(f * 30, f * 30 + 30):
            sentences = [" ".join([f"d{i} s{j}"] * rng.integers(1, 7)) for j in range(12)]
            docs.append("\n".join(sentences[: rng.integers(1, 13)]))
        (root / f"part-{f}.txt").write_text("\n\n".join(docs) + "\n")
    return root
