"""The models learn: pretraining on real text brings the held-out masked-LM loss from chance
down to what the corpus word frequencies give; on text whose words follow from their context
(counting in words) it goes far below both; and each task head solves a small synthetic task
it should solve.

Synthetic tasks feed int32 ids straight to tiny encoders (no tokenizer) and are scored on
held-out examples, so passing means generalizing, not memorizing.
"""

import collections
import re

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.cli.demo_corpus import (
    read_docstrings,
    stdlib_root,
    write_pretraining_corpus,
)
from keras_bert_core.pretraining import pretraining_dataset
from keras_bert_core.text import BertTokenizer
from keras_bert_core.text.vocabulary.wordpiece_vocabulary import SPECIAL_TOKENS
from tests.helpers import cross_entropy

VOCAB_SIZE, SEQ = 60, 24
FIRST_WORD = len(SPECIAL_TOKENS)  # ids below are [PAD] [UNK] [CLS] [SEP] [MASK]


def tiny_model(task, **kwargs):
    """A one-block, 64-wide encoder under `task`, compiled with a learning rate for random
    weights (the fine-tuning default, 5e-5, suits pretrained ones)."""
    config = kbc.BertConfig(vocab_size=VOCAB_SIZE, hidden_size=64, num_layers=1, num_heads=2,
                            intermediate_size=128, max_position_embeddings=SEQ, dropout=0.0,
                            attention_dropout=0.0)
    model = task(kbc.BertEncoder(config), **kwargs)
    model.compile(optimizer=kbc.BertAdamW(3e-3))
    return model


def random_rows(rng, count, low=FIRST_WORD + 2):
    """`[CLS] w w ... w [SEP]` rows of random words with ids >= `low`."""
    ids = rng.integers(low, VOCAB_SIZE, size=(count, SEQ)).astype("int32")
    ids[:, 0], ids[:, -1] = 2, 3
    return ids


def as_inputs(ids):
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids),
            "padding_mask": (ids > 0).astype("int32")}


def fit_and_predict(model, make_split, epochs):
    (x, y), (x_test, y_test) = make_split(512), make_split(256)
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0)
    return model.predict(x_test, batch_size=256, verbose=0), y_test


def test_classifier_learns_whether_a_word_is_present():
    rng = np.random.default_rng(0)
    keyword = FIRST_WORD

    def make_split(count):
        ids = random_rows(rng, count, low=FIRST_WORD + 1)
        labels = rng.integers(0, 2, size=count)
        positions = rng.integers(1, SEQ - 1, size=count)
        ids[labels == 1, positions[labels == 1]] = keyword
        return as_inputs(ids), labels.astype("int32")

    logits, labels = fit_and_predict(
        tiny_model(kbc.BertClassifier, num_classes=2, dropout=0.0), make_split, epochs=15)
    assert np.mean(logits.argmax(-1) == labels) >= 0.9


def test_span_labeler_finds_the_span_marked_by_two_words():
    rng = np.random.default_rng(1)
    opening, closing = FIRST_WORD, FIRST_WORD + 1

    def make_split(count):
        ids = random_rows(rng, count)
        start = rng.integers(1, SEQ - 6, size=count)
        end = start + rng.integers(1, 6, size=count)
        rows = np.arange(count)
        ids[rows, start], ids[rows, end] = opening, closing
        return as_inputs(ids), {"start_positions": start.astype("int32"),
                                "end_positions": end.astype("int32")}

    logits, spans = fit_and_predict(tiny_model(kbc.BertSpanLabeler), make_split, epochs=8)
    exact = ((logits["start_logits"].argmax(-1) == spans["start_positions"])
             & (logits["end_logits"].argmax(-1) == spans["end_positions"]))
    assert exact.mean() >= 0.9


def test_token_classifier_tags_the_words_of_a_set():
    rng = np.random.default_rng(2)
    tagged = np.arange(VOCAB_SIZE) % 3 == 0

    def make_split(count):
        ids = random_rows(rng, count, low=FIRST_WORD)
        # Random lengths, so padding is in play; special tokens carry no label.
        ids[np.arange(SEQ)[None] > rng.integers(SEQ // 2, SEQ, size=count)[:, None]] = 0
        labels = np.where(ids >= FIRST_WORD, tagged[ids], -100).astype("int32")
        return as_inputs(ids), labels

    logits, labels = fit_and_predict(
        tiny_model(kbc.BertTokenClassifier, num_classes=2, dropout=0.0), make_split, epochs=4)
    scored = labels != -100
    assert np.mean(logits.argmax(-1)[scored] == labels[scored]) >= 0.9


def _words(line):
    # How BertTokenizer splits uncased text into words: at whitespace and punctuation.
    return re.findall(r"\w+|[^\w\s]", line.lower())


@pytest.fixture(scope="module")
def docstring_corpus(tmp_path_factory):
    """Train and held-out corpus files from two stdlib packages' docstrings (about 1,700
    sentences), a whole-word vocabulary covering both (so no `[UNK]`), and the word counts
    of the training file."""
    root = tmp_path_factory.mktemp("docstrings")
    docs = read_docstrings(stdlib_root() / "email") + read_docstrings(stdlib_root() / "asyncio")
    train, held_out = root / "train.txt", root / "held_out.txt"
    write_pretraining_corpus([d for i, d in enumerate(docs) if i % 8], train)
    write_pretraining_corpus(docs[::8], held_out)
    counts = {path: collections.Counter(w for line in path.read_text().splitlines()
                                        for w in _words(line)) for path in (train, held_out)}
    vocab = list(SPECIAL_TOKENS) + sorted(counts[train].keys() | counts[held_out].keys())
    return train, held_out, vocab, counts[train]


def pretrain_tiny(train, held_out, vocab, seq_length, predictions, intermediate_size,
                  learning_rate, epochs, steps_per_epoch):
    """Pretrains a 2-block, 64-wide BERT on the `train` text file. Returns the held-out
    masked-LM loss before and after, the held-out targets and the training history."""
    tokenizer = BertTokenizer(vocab)

    def dataset(path, seed):
        return pretraining_dataset(str(path), tokenizer, seq_length=seq_length,
                                   max_predictions_per_seq=predictions, batch_size=32, seed=seed)

    config = kbc.BertConfig(vocab_size=len(vocab), hidden_size=64, num_layers=2, num_heads=2,
                            intermediate_size=intermediate_size,
                            max_position_embeddings=seq_length, dropout=0.0,
                            attention_dropout=0.0)
    model = kbc.BertPretrainer(kbc.BertEncoder(config))
    model.compile(optimizer=kbc.BertAdamW(learning_rate))
    held_out_batches = list(dataset(held_out, seed=2).as_numpy_iterator())
    start_loss, targets = held_out_mlm_loss(model, held_out_batches, len(vocab))
    history = model.fit(dataset(train, seed=1).repeat(), steps_per_epoch=steps_per_epoch,
                        epochs=epochs, verbose=0).history
    end_loss, _ = held_out_mlm_loss(model, held_out_batches, len(vocab))
    return start_loss, end_loss, targets, history


def held_out_mlm_loss(model, batches, vocab_size):
    """Cross-entropy of `model` on the real masked slots of `batches`, per slot, and the
    targets of those slots."""
    targets = np.concatenate([y["mlm"].ravel() for _, y, _ in batches])
    real = np.concatenate([w["mlm"].ravel() for _, _, w in batches]) > 0
    logits = np.concatenate([model.predict_on_batch(x)["mlm"].reshape(-1, vocab_size)
                             for x, _, _ in batches])
    return cross_entropy(logits[real], targets[real]).mean(), targets[real]


@pytest.mark.slow
def test_pretraining_on_docstrings_learns_the_word_statistics(docstring_corpus):
    train, held_out, vocab, train_counts = docstring_corpus
    _, model_loss, targets, history = pretrain_tiny(
        train, held_out, vocab, seq_length=64, predictions=10, intermediate_size=256,
        learning_rate=5e-3, epochs=8, steps_per_epoch=40)
    # What a model that ignores context can reach: training word frequencies (add-one).
    frequencies = np.ones(len(vocab))
    for word, count in train_counts.items():
        frequencies[vocab.index(word)] += count
    unigram_loss = -np.log(frequencies[targets] / frequencies.sum()).mean()

    # Measured: training 6.2 -> 5.75, held-out 5.92 against chance 7.75 and unigram 5.87.
    mlm_losses = history["mlm_loss"]
    assert mlm_losses[-1] < mlm_losses[0] - 0.25, mlm_losses
    assert model_loss < np.log(len(vocab)) - 1.5, (model_loss, len(vocab))
    assert model_loss < unigram_loss + 0.25, (model_loss, unigram_loss)


NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_in_words(n):
    """0 <= n < 100 in English words: `42` -> `forty two`."""
    if n < 20:
        return NUMBER_WORDS[n]
    return TENS[n // 10 - 2] + ("" if n % 10 == 0 else " " + NUMBER_WORDS[n % 10])


def write_counting_corpus(path, documents, rng):
    """Documents of sentences that count up in words from a random start: every masked word
    follows from its neighbours, while its frequency alone says little."""
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            for _ in range(4):
                start = int(rng.integers(0, 88))
                length = int(rng.integers(4, 12))
                f.write(" ".join(number_in_words(n) for n in range(start, start + length)
                                 if n < 100) + "\n")
            f.write("\n")


@pytest.mark.slow
def test_pretraining_learns_to_fill_in_counting_sequences_from_context(tmp_path):
    rng = np.random.default_rng(3)
    train, held_out = tmp_path / "train.txt", tmp_path / "held_out.txt"
    write_counting_corpus(train, 400, rng)
    write_counting_corpus(held_out, 40, rng)
    vocab = list(SPECIAL_TOKENS) + NUMBER_WORDS + TENS
    start_loss, end_loss, targets, history = pretrain_tiny(
        train, held_out, vocab, seq_length=48, predictions=8, intermediate_size=128,
        learning_rate=3e-3, epochs=12, steps_per_epoch=50)
    # Context-free guessing with the held-out words' own frequencies: the best that word
    # statistics alone can do.
    frequencies = np.bincount(targets, minlength=len(vocab)) / len(targets)
    unigram_loss = -np.log(frequencies[targets]).mean()

    # Measured: held-out 3.52 -> 0.69 (unigram 2.99); training accuracy 0.11 -> 0.81.
    assert start_loss > np.log(len(vocab)) - 0.5, start_loss
    assert end_loss < 0.3 * start_loss, (start_loss, end_loss)
    assert end_loss < unigram_loss - 1.0, (end_loss, unigram_loss)
    assert history["mlm_accuracy"][-1] > 0.7, history["mlm_accuracy"]
