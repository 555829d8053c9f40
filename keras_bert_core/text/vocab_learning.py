"""Learn a WordPiece vocabulary from raw text files with tf.text's BERT vocabulary learner."""

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset import (
    bert_vocab_from_dataset,
)

from keras_bert_core.text.pretraining_corpus import expand_text_files
from keras_bert_core.text.vocab_file import SPECIAL_TOKENS

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
