"""From options to the objects a command trains: the vocabulary and its `BertPreprocessor`,
the encoder (loaded from a checkpoint or new from `--preset`/`--config`), each checked against
the other. TensorFlow is imported inside the functions that need it, so that `kbc --help`
answers without starting it."""

import dataclasses
import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say
from keras_bert_core.config import PRESETS, BertConfig

# Files of a run directory (see `run_dir`) that other commands look for.
CONFIG_FILE = "config.json"
MODEL_FILE = "model.keras"
VOCAB_FILE = "vocab.txt"


def run_directory_of(path):
    """The run directory holding `path` when it is a `kbc` run or a model inside one."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    return folder if os.path.isfile(os.path.join(folder, CONFIG_FILE)) else None


def model_path(path):
    """`path`, or the model inside it when it is a `kbc` run directory."""
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, MODEL_FILE)):
        return os.path.join(path, MODEL_FILE)
    return path


def find_vocab(vocab, checkpoint=None):
    """`--vocab`, else the folder of the checkpoint when it holds vocabulary files of any
    kind (see `text.vocabulary.files.find_vocabulary`): a path that `make_preprocessor` takes."""
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    if vocab:
        if not os.path.exists(vocab):
            raise UserError(f"--vocab {vocab}: no such file or folder")
        return vocab
    if checkpoint:
        folder = checkpoint_folder(checkpoint)
        try:
            find_vocabulary(folder)
        except ValueError as e:
            raise UserError(f"no vocabulary beside the checkpoint {checkpoint} ({e}); pass "
                            "--vocab") from None
        return folder
    raise UserError("no vocabulary given; pass --vocab PATH (learn one with `kbc vocab`)")


def checkpoint_folder(checkpoint):
    """The folder a checkpoint (a folder, a file or a TF checkpoint prefix) lies in."""
    return checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint) or "."


def casing(cased):
    """`BertPreprocessor`'s `lower_case` for `--cased` (True) / `--uncased` (False) / neither
    (None: the vocabulary's own setting)."""
    return None if cased is None else not cased


def make_preprocessor(vocab_path, seq_length, cased=None):
    """The `BertPreprocessor` of a vocabulary path (`find_vocab`): its tokenizer is the one
    the files are for, packing as that tokenizer's family does."""
    from keras_bert_core.text import BertPreprocessor

    try:
        preprocessor = BertPreprocessor(vocab_path, seq_length=seq_length,
                                        lower_case=casing(cased))
    except ValueError as e:
        message = str(e)
        if "BPE" in message and "cased" in message:
            message = (f"--uncased: {vocab_path} is a byte-level BPE vocabulary (RoBERTa), "
                       "which is always cased; leave --uncased out")
        elif vocab_path not in message:
            message = f"{vocab_path}: {message}"
        raise UserError(message) from None
    check_casing(preprocessor, vocab_path, cased)
    return preprocessor


def check_casing(preprocessor, vocab_path, cased):
    """`--cased` with a vocabulary without capitals is refused: every capitalized word
    would miss its pieces. Lower-casing text for a vocabulary with capitals is said, not
    refused: its lower-case pieces still read the text (uncased fine-tuning of a cased
    checkpoint is a choice), but its capitals are lost."""
    from keras_bert_core.text.vocabulary.identity import capitalized_tokens

    counted = capitalized_tokens(preprocessor.tokenizer)
    if counted is None:  # byte-level BPE: always cased
        return
    capitals, size = counted
    if not preprocessor.lower_case and not capitals:
        if cased:
            raise UserError(f"--cased: the vocabulary {vocab_path} has 0 of {size:,} tokens "
                            "with capitals, so it is uncased; drop --cased")
        say(f"note: the vocabulary {vocab_path} has 0 of {size:,} tokens with capitals, so "
            "it is uncased, but its folder says cased: give --uncased to read capitalized "
            "words")
    elif preprocessor.lower_case and capitals:
        given = " (--uncased)" if cased is False else ""
        say(f"note: the vocabulary {vocab_path} has {capitals:,} of {size:,} tokens with "
            f"capitals, so it is cased, but the text is lower-cased{given}: its capitals "
            "are lost; give --cased to keep them")


def vocabulary_size(preprocessor):
    return preprocessor.tokenizer.vocabulary_size()


def check_fits(config, vocab, vocab_path, seq_length, source):
    """The vocabulary (the one the model was trained with) and the sequence length must fit
    the model's tables, and a Hugging Face checkpoint's special tokens sit at its ids.
    `vocab`: a `BertPreprocessor` or a list of tokens."""
    from keras_bert_core.checkpoints.huggingface import check_special_token_ids

    size = vocabulary_size(vocab) if hasattr(vocab, "tokenizer") else len(vocab)
    try:
        config.check_fits(size, seq_length, vocabulary=vocabulary_file(vocab_path),
                          seq_length_name="--seq-length", model=source)
        if hasattr(vocab, "tokenizer"):
            check_special_token_ids(source, vocab.packer, vocabulary_file(vocab_path))
    except ValueError as e:
        raise UserError(str(e)) from None
    if hasattr(vocab, "tokenizer"):
        check_token_types(config, vocab, vocab_path, source)


def vocabulary_file(vocab_path):
    """The vocabulary file a folder (a run, a checkpoint) holds, as messages name it."""
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    if not os.path.isdir(vocab_path):
        return vocab_path
    return find_vocabulary(vocab_path).file


def check_token_types(config, preprocessor, vocab_path, source):
    """A model with one token type (RoBERTa) cannot read pairs packed with segment id 1, as
    a WordPiece or SentencePiece vocabulary packs them."""
    from keras_bert_core.text.preprocessor import packing_of

    second = packing_of(preprocessor.tokenizer)["second_segment_id"]
    if 0 < config.type_vocab_size <= second:
        raise UserError(
            f"{source} has {config.type_vocab_size} token type(s), but {vocab_path} is a "
            f"{preprocessor.tokenizer_kind} vocabulary, whose pairs use segment id {second}: "
            "give it a byte-level BPE vocabulary (vocab.json, as RoBERTa), or a config with "
            "type_vocab_size 2")


def check_same_kind(preprocessor, vocab_path, checkpoint):
    """`--vocab` given with a checkpoint whose folder holds a vocabulary of another kind
    (e.g. a WordPiece vocab.txt with a RoBERTa folder) is refused: the model reads the ids
    of its own tokenizer."""
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    folder = checkpoint_folder(checkpoint)
    try:
        own = find_vocabulary(folder)
    except ValueError:  # the checkpoint comes without one
        return
    if own.kind != preprocessor.tokenizer_kind:
        raise UserError(
            f"--vocab {vocab_path} is a {preprocessor.tokenizer_kind} vocabulary, but the "
            f"checkpoint {checkpoint} comes with a {own.kind} one ({own.file}); use "
            "the vocabulary the model was trained with (leave out --vocab)")


def new_config(options, vocab_size):
    """The `BertConfig` of a model built from scratch (`ModelOptions`): `--preset`, with the
    keys of `--config` over it when both are given, else `--config` alone or the tiny preset;
    a new model's `vocab_size` is always the vocabulary's."""
    import json

    if not options.config:
        return BertConfig.preset(options.preset or "tiny", vocab_size=vocab_size)
    try:
        config = BertConfig.from_json(options.config)
        if options.preset:
            with open(options.config, encoding="utf-8") as f:
                config = BertConfig.from_dict({**PRESETS[options.preset], **json.load(f)})
    except (ValueError, TypeError) as e:
        raise UserError(f"{options.config}: {e}" if options.config not in str(e)
                        else str(e)) from None
    return dataclasses.replace(config, vocab_size=vocab_size)


def model_source(options):
    """How `kbc` names a model built from `options` (`ModelOptions`) in its messages."""
    parts = [f"--preset {options.preset}"] if options.preset else []
    if options.config:
        parts.append(f"--config {options.config}")
    return " ".join(parts) or "--preset tiny"


def check_model_options(args):
    """`--preset`/`--config` build a new model and `--checkpoint` loads one: refused together
    (the checkpoint won, and the others were ignored without a word). A `--config` file's
    keys that no `BertConfig` takes are named."""
    given = [f"--{name} {getattr(args, name)}" for name in ("preset", "config")
             if getattr(args, name)]
    if args.checkpoint and given:
        raise UserError(f"--checkpoint {args.checkpoint} loads a model, and "
                        f"{' and '.join(given)} would build a new one; give one of them")
    if args.config:
        _note_ignored_config_keys(args.config)


def _note_ignored_config_keys(path):
    """Names the keys of the `--config` file at `path` that no `BertConfig` field takes (a
    misspelled "hidden_sise" left the preset's size without a word). Not for a Hugging Face
    config.json (it names its `model_type`), whose other settings are ignored by design."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError):  # reported where the config is read
        return
    if isinstance(values, dict) and "model_type" not in values:
        ignored = BertConfig.ignored_keys(values)
        if ignored:
            say(f"note: --config {path}: ignored keys that no BertConfig has: "
                f"{', '.join(ignored)}")


def build_encoder(options, vocab, vocab_path, checkpoint=None):
    """`(encoder, source)`: loaded from `checkpoint` (any supported format or a `kbc` run),
    else new from `options` (`ModelOptions`: `--config`/`--preset`), checked against the
    vocabulary (a `BertPreprocessor`, or a list of WordPiece tokens) and `--seq-length`."""
    from keras_bert_core.checkpoints import load_checkpoint
    from keras_bert_core.models import BertEncoder

    size = vocabulary_size(vocab) if hasattr(vocab, "tokenizer") else len(vocab)
    if checkpoint:
        source = model_path(checkpoint)
        encoder, config = load_checkpoint(source)
        check_fits(config, vocab, vocab_path, options.seq_length, source)
        return under_global_dtype_policy(encoder), source
    source = model_source(options)
    config = new_config(options, size)
    check_fits(config, vocab, vocab_path, options.seq_length, source)
    return BertEncoder(config), source


def under_global_dtype_policy(encoder):
    """`encoder`, rebuilt with the same weights when its dtype policy is not the global one:
    a `.keras` file keeps the policy it was saved with, and `--mixed-precision` must win."""
    import keras

    from keras_bert_core.models import BertEncoder

    # The layers' policy: a reloaded BertEncoder reports "float32" for itself whatever it is.
    if encoder.embeddings.dtype_policy.name == keras.config.dtype_policy().name:
        return encoder
    rebuilt = BertEncoder(encoder.config)
    rebuilt.set_weights(encoder.get_weights())
    return rebuilt


def checkpoint_model(checkpoint):
    """The whole model `checkpoint` holds, as `kbc.from_preset` reads it: a task model, an
    embedding model (a sentence-transformers folder), else its encoder."""
    from keras_bert_core.errors import CheckpointError
    from keras_bert_core.presets import from_preset

    try:
        return from_preset(checkpoint)[0]
    except CheckpointError as e:
        raise UserError(str(e)) from None
