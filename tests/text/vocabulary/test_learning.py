import pytest

from keras_bert_core.cli import demo_corpus
from keras_bert_core.text.vocabulary.learning import _fit_to_size, learn_wordpiece_vocab
from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Real English: the docstrings of the standard library's `logging` package (~40 kB)."""
    path = tmp_path_factory.mktemp("corpus") / "logging.txt"
    docs = demo_corpus.read_docstrings(root=demo_corpus.stdlib_root() / "logging")
    assert demo_corpus.write_pretraining_corpus(docs, path) > 100
    return path


def test_learned_vocab_covers_its_corpus(corpus, tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab = learn_wordpiece_vocab(str(corpus), vocab_size=300, output_file=str(vocab_file))

    assert vocab[:5] == SPECIALS
    assert 250 <= len(vocab) <= 300
    assert len(set(vocab)) == len(vocab)
    assert vocab_file.read_text().splitlines() == vocab
    assert {"the", "logger", "##s"} <= set(vocab)

    lines = corpus.read_text().splitlines()
    tokenizer = BertTokenizer(str(vocab_file))
    ids = tokenizer(lines).flat_values.numpy()
    assert (ids == tokenizer.unk_id).mean() < 0.001
    # The learned pieces carry the text: far fewer ids than with the alphabet alone.
    alphabet = [t for t in vocab if t in SPECIALS or len(t.removeprefix("##")) == 1]
    assert len(ids) < 0.6 * len(BertTokenizer(alphabet)(lines).flat_values)


def test_normalization_matches_the_tokenizer(tmp_path):
    text = "Straße Café NAÏVE zero\u200bwidth Ünïcödé résumé.\n" * 12
    corpus = tmp_path / "accents.txt"
    corpus.write_text(text, encoding="utf-8")

    uncased = learn_wordpiece_vocab(str(corpus), vocab_size=200)
    # Lower case without case folding keeps "ß"; NFD + stripping removes the accents.
    assert {"straße", "cafe", "naive", "zerowidth", "resume"} <= set(uncased)
    assert not {"é", "ï", "ss"} & set(uncased)
    ids = BertTokenizer(uncased)(text.splitlines()).flat_values.numpy()
    assert not (ids == 1).any()

    cased = learn_wordpiece_vocab(str(corpus), vocab_size=200, lower_case=False)
    assert {"Straße", "Café", "NAÏVE"} <= set(cased)
    ids = BertTokenizer(cased, lower_case=False)(text.splitlines()).flat_values.numpy()
    assert not (ids == 1).any()


def test_fit_to_size_keeps_reserved_tokens_and_alphabet():
    learned = SPECIALS + ["a", "b", "ab", "ba", "##a", "##b", "abab"]
    assert _fit_to_size(learned, 10, SPECIALS) == SPECIALS + ["a", "b", "ab", "##a", "##b"]
    with pytest.raises(ValueError, match="alone need 9 tokens"):
        _fit_to_size(learned, 8, SPECIALS)


def test_too_small_vocab_size_is_an_error(tmp_path):
    corpus = tmp_path / "abc.txt"
    corpus.write_text("abcdefghij klmnopqrst\n" * 20)
    with pytest.raises(ValueError, match="too small"):
        learn_wordpiece_vocab(str(corpus), vocab_size=20)


def test_bad_input_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        learn_wordpiece_vocab(str(tmp_path / "missing.txt"), vocab_size=100)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.txt.*is empty"):
        learn_wordpiece_vocab([str(empty)], vocab_size=100)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    with pytest.raises(ValueError, match="blank.txt.*no sentences"):
        learn_wordpiece_vocab(str(tmp_path / "*.txt"), vocab_size=100)
