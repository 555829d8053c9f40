"""A tokenizer's vocabulary as assets of a `.keras` file, not inline in its config.

Keras writes a `.keras` file as `config.json` (every layer's `get_config`), the weights,
and `assets/`, where each layer that has `save_assets` writes its files into a folder of
its own (named by the attributes that lead to it, e.g.
`assets/preprocessor/tokenizer/vocab.txt`). While Keras writes such a file, the package's
tokenizers leave their vocabulary out of their config and write their vocabulary files
instead (`vocab.txt`; `vocab.json` and `merges.txt`; `spiece.model`; `sentencepiece.bpe.model`;
each with a `tokenizer_config.json`), which `load_assets` reads back into the tokenizer that
`from_config` made without one. Anywhere else (`get_config` in memory, `from_config`
copies, `.keras` files written before) the config holds the vocabulary inline, as before.
"""

from keras_bert_core.keras_internals import writing_keras_file
from keras_bert_core.text.vocabulary.files import (
    BYTE_PAIR,
    find_vocabulary,
    tokenizer_kind,
    write_vocabulary_files,
)


class VocabularyAssets:
    """Mixin of the package's tokenizers: their vocabulary files as `.keras` assets.

    A tokenizer made with `vocabulary=None` (as `from_config` makes it from a `.keras`
    file's config) has no vocabulary until `load_assets` reads its files; it must define
    `has_vocabulary` and `_set_vocabulary(vocabulary[, merges])`.

    Example:
    >>> import os, tempfile
    >>> from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"]
    >>> folder = tempfile.mkdtemp()
    >>> BertTokenizer(vocab).save_assets(folder)
    >>> sorted(os.listdir(folder))
    ['tokenizer_config.json', 'vocab.txt']
    >>> empty = BertTokenizer(None)
    >>> empty.has_vocabulary
    False
    >>> empty.load_assets(folder)
    >>> empty(["The fox"]).to_list()
    [[5, 6]]
    """

    @property
    def config_holds_vocabulary(self):
        """Whether `get_config` holds the vocabulary inline: it has one, and Keras is not
        writing a `.keras` file (whose assets hold it)."""
        return self.has_vocabulary and not writing_keras_file()

    def save_assets(self, dir_path):
        write_vocabulary_files(self, dir_path)

    def load_assets(self, dir_path):
        if self.has_vocabulary:  # a `.keras` file written with the vocabulary inline
            return
        kind = tokenizer_kind(self)
        if dir_path is None:
            raise ValueError(f"the .keras file holds no vocabulary for {type(self).__name__} "
                             f"{self.name!r}: its config has none and its assets folder is "
                             "missing")
        source = find_vocabulary(dir_path)
        if source.kind != kind:
            raise ValueError(f"the .keras assets of {type(self).__name__} {self.name!r} hold a "
                             f"{source.kind} vocabulary, not a {kind} one")
        self._set_vocabulary(source.vocabulary,
                             *([source.merges] if kind == BYTE_PAIR else []))

    def _check_vocabulary(self):
        if not self.has_vocabulary:
            raise ValueError(f"{type(self).__name__} {self.name!r} has no vocabulary: it was "
                             "made from a config without one (a .keras file keeps it as an "
                             "asset: load the file with keras.saving.load_model)")
