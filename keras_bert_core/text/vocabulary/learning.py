"""Learn a vocabulary from raw text files: WordPiece (BERT, DistilBERT) with tf.text's BERT
vocabulary learner, byte-level BPE (RoBERTa) with Hugging Face `tokenizers`, SentencePiece
(ALBERT) with `sentencepiece`."""

import os
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset import (
    bert_vocab_from_dataset,
)

from keras_bert_core.extras import require
from keras_bert_core.text.corpus_files import expand_text_files
from keras_bert_core.text.vocabulary.byte_pair_vocabulary import (
    SPECIAL_TOKENS as BPE_SPECIAL_TOKENS,
)
from keras_bert_core.text.vocabulary.wordpiece_vocabulary import SPECIAL_TOKENS

# Characters BertTokenizer deletes: control (except tab and newlines), format, private use,
# U+FFFD.
_REMOVED = r"[^\P{Cc}\t\n\r]|\p{Cf}|\p{Co}|\x{fffd}"


def learn_wordpiece_vocab(
    files,
    vocab_size,
    lower_case=True,
    reserved_tokens=SPECIAL_TOKENS,
    output_file=None,
    learn_params=None,
):
    """Learns a BERT WordPiece vocabulary from text files.

    Text is normalized as `BertTokenizer(lower_case=...)` normalizes it (control and
    format characters removed; uncased: NFD, accents stripped, lower case) and split into
    words at whitespace, punctuation and CJK ideographs, so the learned pieces are those
    the tokenizer looks up. The vocabulary starts with `reserved_tokens`
    (`[PAD]` gets id 0), then every character of the alphabet and its `##` continuation
    form (so any word of known characters tokenizes without `[UNK]`), then the learned
    pieces, most frequent first.

    Args:
        files: a path, a glob, or a list of them, of UTF-8 text files.
        vocab_size: int, the maximum number of tokens, reserved tokens included.
        lower_case: bool, learn an uncased vocabulary; must match the tokenizer's.
        reserved_tokens: tokens placed first, in order.
        output_file: optional path; the vocabulary is written there, one token a line.
        learn_params: optional dict of extra arguments for tf.text's
            `wordpiece_tokenizer_learner_lib.learn` (for example `lower_thresh`, the
            minimum count of a piece, default 10; or `max_unique_chars`).

    Returns:
        The vocabulary, a list of at most `vocab_size` strings.

    Example:

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("The cat sat on the mat.\\nThe cats sat.\\n" * 20)
    >>> vocab = learn_wordpiece_vocab(path, vocab_size=100)
    >>> vocab[:5], "cat" in vocab
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True)
    """
    reserved_tokens = list(reserved_tokens)

    def normalize(lines):
        # BertTokenizer's normalization. tf.text's own lower_case=True would case-fold
        # instead ("ß" -> "ss") and keep control characters: pieces would not match.
        lines = tf.strings.regex_replace(lines, _REMOVED, "")
        if lower_case:
            lines = tf.strings.regex_replace(tf_text.normalize_utf8(lines, "NFD"), r"\p{Mn}", "")
            lines = tf.strings.lower(lines, encoding="utf-8")
        return lines

    lines = tf.data.TextLineDataset(expand_text_files(files)).batch(1024).map(normalize)
    # The text is normalized already; the learner only splits it into words.
    vocab = bert_vocab_from_dataset(
        lines,
        vocab_size,
        reserved_tokens,
        bert_tokenizer_params={"lower_case": False},
        learn_params=learn_params,
    )
    vocab = _fit_to_size(vocab, vocab_size, reserved_tokens)
    if output_file is not None:
        with tf.io.gfile.GFile(output_file, "w") as f:
            f.write("".join(token + "\n" for token in vocab))
    return vocab


def _fit_to_size(vocab, vocab_size, reserved_tokens):
    """Drops the least frequent multi-character pieces when the learner overshoots.

    The learner's threshold search can stop above `vocab_size`. Its output lists pieces by
    falling frequency, so the tail is the cheapest to drop; reserved tokens and the
    alphabet stay, or no word of those characters could be tokenized.
    """
    if len(vocab) <= vocab_size:
        return vocab
    essential = {t for t in vocab if t in reserved_tokens or len(t.removeprefix("##")) == 1}
    if len(essential) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: the reserved tokens and the corpus "
            f"alphabet (with '##' forms) alone need {len(essential)} tokens. Raise "
            "vocab_size or cap the alphabet with learn_params={'max_unique_chars': ...}."
        )
    others = [t for t in vocab if t not in essential]
    keep = essential.union(others[: vocab_size - len(essential)])
    return [t for t in vocab if t in keep]


# ALBERT's: <pad> 0, <unk> 1, then these control symbols.
SENTENCEPIECE_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")


def _lines(files):
    for path in expand_text_files(files):
        with tf.io.gfile.GFile(path) as f:
            yield from f


def learn_bpe_vocab(files, vocab_size, output_dir, min_count=2):
    """Learns a RoBERTa-style byte-level BPE vocabulary (`vocab.json` + `merges.txt`).

    GPT-2's pre-tokenization, all 256 byte symbols (no text is ever `<unk>`), RoBERTa's
    special tokens first; the files load into `BytePairTokenizer` and Hugging Face's
    `RobertaTokenizer` alike.

    Args:
        files: a path, a glob, or a list of them, of UTF-8 text files.
        vocab_size: int, the maximum number of tokens, special tokens included.
        output_dir: the folder to write `vocab.json` and `merges.txt` into.
        min_count: the least number of times a merge must occur.

    Returns:
        The paths `(vocab.json, merges.txt)`.

    Example:
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "corpus.txt")
    >>> _ = open(path, "w").write("The cat sat on the mat.\\nThe cats sat.\\n" * 20)
    >>> vocab_file, merges_file = learn_bpe_vocab(path, 300, folder)
    >>> os.path.basename(vocab_file), os.path.basename(merges_file)
    ('vocab.json', 'merges.txt')
    """
    tokenizers = require("tokenizers", "learning a byte-level BPE vocabulary")

    alphabet = 256 + len(BPE_SPECIAL_TOKENS)
    if vocab_size <= alphabet:
        raise ValueError(f"vocab_size {vocab_size} leaves no room for merges: a byte-level "
                         f"BPE vocabulary starts with {alphabet} tokens (256 bytes and "
                         f"{len(BPE_SPECIAL_TOKENS)} special tokens)")
    tokenizer = tokenizers.ByteLevelBPETokenizer(add_prefix_space=False)
    tokenizer.train_from_iterator(
        _lines(files), vocab_size=vocab_size, min_frequency=min_count,
        special_tokens=list(BPE_SPECIAL_TOKENS), show_progress=False)
    if tokenizer.get_vocab_size() <= len(BPE_SPECIAL_TOKENS):
        raise ValueError(f"{files}: no text to learn a vocabulary from")
    os.makedirs(output_dir, exist_ok=True)
    vocab_file, merges_file = tokenizer.save_model(str(output_dir))
    return vocab_file, merges_file


def albert_normalize(text, lower_case=True, keep_accents=False):
    """ALBERT's text preprocessing before SentencePiece (whitespace runs collapsed, ``
    and '' made ", accents stripped, lower case), as `SentencePieceTokenizer` applies it.

    >>> albert_normalize("  Café   ``quoted''  ")
    'cafe "quoted"'
    """
    text = " ".join(text.strip().split()).replace("``", '"').replace("''", '"')
    if not keep_accents:
        text = "".join(c for c in unicodedata.normalize("NFKD", text)
                       if not unicodedata.combining(c))
    return text.lower() if lower_case else text


def learn_sentencepiece_model(files, vocab_size, output_file, lower_case=True):
    """Learns an ALBERT-style SentencePiece unigram model (`spiece.model`).

    The text is preprocessed as ALBERT's tokenizer preprocesses it (`albert_normalize`);
    ids 0-4 are ALBERT's `<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`.

    Args:
        files: a path, a glob, or a list of them, of UTF-8 text files.
        vocab_size: int, the number of pieces, special tokens included.
        output_file: the `.model` file to write.
        lower_case: learn an uncased model; must match the tokenizer's `lower_case`.

    Returns:
        `output_file`.

    Example:
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "corpus.txt")
    >>> _ = open(path, "w").write("The cat sat on the mat.\\nThe cats sat.\\n" * 20)
    >>> os.path.basename(learn_sentencepiece_model(path, 30, os.path.join(folder, "a.model")))
    'a.model'
    """
    import io

    import sentencepiece

    lines = (albert_normalize(line, lower_case) for line in _lines(files))
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=(line for line in lines if line), model_writer=model,
            vocab_size=vocab_size, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1,
            eos_id=-1, control_symbols=list(SENTENCEPIECE_CONTROL_SYMBOLS),
            hard_vocab_limit=False, minloglevel=2)
    except RuntimeError as e:
        raise ValueError(f"{files}: cannot learn a SentencePiece model ({e})") from None
    with tf.io.gfile.GFile(output_file, "wb") as f:
        f.write(model.getvalue())
    return output_file
