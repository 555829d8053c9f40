"""What the subcommands share: common options, the option objects parsed arguments become
(`ModelOptions`, `TrainingOptions`), and turning them into vocabularies, encoders, strategies
and progress reports. TensorFlow is imported inside the functions that need it, so that
`kbc --help` answers without starting it."""

import argparse
import contextlib
import dataclasses
import os
import sys
import time

from keras_bert_core.cli import UserError
from keras_bert_core.config import PRESETS, BertConfig
from keras_bert_core.extras import require

# Files of a run directory (see `run_dir`) that other commands look for.
CONFIG_FILE = "config.json"
MODEL_FILE = "model.keras"
VOCAB_FILE = "vocab.txt"

# `--optimizer` and `--strategy` choices: `optimizers.create_optimizer`'s and
# `training.distribution.STRATEGIES` (not imported here: both modules load TensorFlow, and
# `kbc --help` must answer without it; tests/cli/test_training_flags.py checks they agree).
OPTIMIZERS = ("adamw", "lamb")
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")


VOCAB_HELP = ("the vocabulary: a WordPiece vocab.txt (BERT, DistilBERT), a byte-level BPE "
              "vocab.json with merges.txt beside it (RoBERTa), a SentencePiece .model "
              "(ALBERT), or a folder holding one (e.g. from `kbc vocab --kind bpe`)")


def add_vocab_options(parser, seq_length, vocab_help=VOCAB_HELP, seq_length_help=""):
    group = parser.add_argument_group("text")
    group.add_argument("--vocab", metavar="PATH", help=vocab_help)
    group.add_argument("--seq-length", type=int_at_least(3), default=seq_length,
                       help=" ".join(filter(None, (
                           "tokens per sequence, [CLS] and [SEP] (<s>, </s>) included",
                           seq_length_help))))
    casing = group.add_mutually_exclusive_group()
    casing.add_argument("--cased", action="store_const", const=True, default=None,
                        help="keep case and accents (a cased WordPiece or SentencePiece "
                             "vocabulary). Default: what the vocabulary's folder says "
                             "(tokenizer_config.json's do_lower_case, e.g. in a Hugging Face "
                             "checkpoint or a kbc run), else uncased. Byte-level BPE "
                             "(RoBERTa) is always cased: --cased is accepted and changes "
                             "nothing there")
    casing.add_argument("--uncased", dest="cased", action="store_const", const=False,
                        help="lower-case the text, whatever the vocabulary's folder says "
                             "(refused with byte-level BPE, which is always cased)")


class _Options:
    @classmethod
    def from_args(cls, args):
        """The options of parsed `kbc` arguments, which hold one attribute per field."""
        return cls(**{field.name: getattr(args, field.name) for field in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class ModelOptions(_Options):
    """A model built from scratch or loaded for training (`add_model_options`), and the
    sequence length it must take (`--seq-length`). No `preset` and no `config`: the tiny
    preset.

    Example:
    >>> ModelOptions(seq_length=128, preset="albert_base").preset
    'albert_base'
    """

    seq_length: int
    preset: str | None = None
    config: str | None = None


@dataclasses.dataclass(frozen=True)
class TrainingOptions(_Options):
    """How to train (`add_training_options`, less the batch size, which the data takes).

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_training_options(parser, batch_size=32, learning_rate=5e-5)
    >>> TrainingOptions.from_args(parser.parse_args(["--xla", "--optimizer", "lamb"]))
    TrainingOptions(learning_rate=5e-05, warmup_fraction=0.1, seed=0, strategy='default', \
tpu_address=None, mixed_precision=None, xla=True, optimizer='lamb', accumulation_steps=1)
    """

    learning_rate: float
    warmup_fraction: float = 0.1
    seed: int = 0
    strategy: str = "default"
    tpu_address: str | None = None
    mixed_precision: str | None = None
    xla: bool = False
    optimizer: str = "adamw"
    accumulation_steps: int = 1


def add_model_options(parser):
    group = parser.add_argument_group("model (when not starting from a checkpoint)")
    group.add_argument("--preset", choices=sorted(PRESETS),
                       help="the architecture and size: BERT's tiny (the default) to large, "
                            "roberta_*, albert_*, distilbert_base")
    group.add_argument("--config", metavar="JSON",
                       help="a BertConfig JSON (ours, a Hugging Face config.json or a "
                            "google-research bert_config.json); alone it replaces --preset, "
                            "beside --preset its keys override the preset's (e.g. "
                            "{\"num_layers\": 2, \"hidden_size\": 128} for a small "
                            "albert_base)")


def add_training_options(parser, batch_size, learning_rate, warmup_fraction=0.1):
    group = parser.add_argument_group("training")
    group.add_argument("--batch-size", type=positive_int, default=batch_size,
                       help="global batch size, split across replicas")
    group.add_argument("--learning-rate", type=float, default=learning_rate,
                       help="peak learning rate (linear warmup then linear decay)")
    group.add_argument("--warmup-fraction", type=float, default=warmup_fraction,
                       help="fraction of the optimizer updates spent warming up")
    group.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw",
                       help="adamw (BERT's), or lamb (layer-wise trust ratios, for large "
                            "batches); both decay weights but LayerNorm and biases, and clip "
                            "gradients to global norm 1")
    group.add_argument("--accumulation-steps", type=positive_int, default=1, metavar="N",
                       help="average the gradients of N batches into each optimizer update: "
                            "the updates of a batch N times --batch-size, in the memory of "
                            "one (the learning-rate schedule counts updates); --strategy "
                            "default or one_device")
    group.add_argument("--strategy", choices=STRATEGIES, default="default",
                       help="tf.distribute strategy (multi_worker reads TF_CONFIG)")
    group.add_argument("--tpu-address", help="for --strategy tpu: 'local', a name or grpc://")
    group.add_argument("--mixed-precision", choices=("float16", "bfloat16"),
                       help="compute in this dtype, keep float32 weights")
    group.add_argument("--xla", action="store_true",
                       help="compile the train step with XLA (per replica under mirrored and "
                            "multi_worker)")
    group.add_argument("--seed", type=int, default=0, help="random seed")


def add_run_options(parser, resumable=True):
    group = parser.add_argument_group("output")
    group.add_argument("--run-dir", metavar="DIR",
                       help="where to write the run (default: runs/<command>-<time>)")
    group.add_argument("--overwrite", action="store_true",
                       help="replace an existing run directory")
    group.add_argument("--backup-every", type=positive_int, default=50, metavar="STEPS",
                       help="back up the training state every this many steps (and at "
                            "every epoch end), keeping the two newest: a killed run loses "
                            "at most this many steps")
    if not resumable:
        return
    group.add_argument("--resume", action="store_true",
                       help="continue the run in --run-dir from its newest backup, with the "
                            "arguments it was started with")


def full_batches(rows, batch_size, data="the training data"):
    """Full batches in `rows`; fewer rows than one batch is the user's error."""
    if rows < batch_size:
        raise UserError(f"{data} has {rows} rows, fewer than --batch-size {batch_size}")
    return rows // batch_size


def positive_int(text):
    """argparse type: a whole number of at least 1."""
    return int_at_least(1)(text)


def int_at_least(least):
    """argparse type: a whole number of at least `least`."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is less than {least}")
        return value

    return parse


@contextlib.contextmanager
def native_log_hidden():
    """Sends what native code writes to stderr (file descriptor 2) to a scratch file for the
    block, unless the user asked for TensorFlow's log (`--tf-logs`, TF_CPP_MIN_LOG_LEVEL=0);
    replayed if the block raises. TensorFlow 2.21's libraries log through absl as they load,
    before any level can be set, and LiteRT announces its XNNPACK delegate: neither obeys
    TF_CPP_MIN_LOG_LEVEL."""
    import tempfile

    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "0":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def load_tensorflow_quietly():
    """Imports TensorFlow with its load-time log hidden (`native_log_hidden`), and gives
    absl TF_CPP_MIN_LOG_LEVEL's level for what is logged later."""
    with native_log_hidden():
        apply_tf_log_level_to_absl()
        import tensorflow  # noqa: F401


def apply_tf_log_level_to_absl():
    """Gives TF_CPP_MIN_LOG_LEVEL's level to absl's C++ log too, which ignores it: XLA logs
    through absl (e.g. "Compiled cluster using XLA!" at the first compiled step, after a
    line saying absl's log is not initialized). Call it before TensorFlow loads: it loads
    TensorFlow's framework library alone (fast), whose absl keeps the level. Best effort:
    a TensorFlow whose library lacks the function keeps its log."""
    import ctypes
    import importlib.util
    import mmap
    import re

    try:
        level = min(max(int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")), 0), 3)
        spec = importlib.util.find_spec("tensorflow")
        library = os.path.join(spec.submodule_search_locations[0],
                               "libtensorflow_framework.so.2")
        # absl::SetMinLogLevel's name holds absl's release (absl::lts_20250127::...), which
        # changes with TensorFlow's: find it in the library's symbol names.
        with open(library, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            found = re.search(
                rb"_ZN4absl\d+lts_\d+14SetMinLogLevelENS0_18LogSeverityAtLeastE", m)
            name = found and found.group().decode()  # read before the map closes
        if not name:
            return
        set_min_log_level = getattr(ctypes.CDLL(library), name)
    except (ValueError, AttributeError, OSError):  # no such library or symbol
        return
    set_min_log_level.argtypes = [ctypes.c_int]
    set_min_log_level(level)  # absl's severities number as TensorFlow's: INFO 0 ... FATAL 3


class _Messages:
    quiet = False  # `--quiet`, set by `quiet_messages` while a command runs


@contextlib.contextmanager
def quiet_messages(quiet=True):
    """`--quiet`: while inside, `say`, `stage` and `progress` are silent, and so are Keras's
    progress bars and step logs, TensorFlow's Python warnings and Python's warnings. Errors
    (which `kbc` prints) and results (stdout) remain. Everything is restored on the way out.

    Example:
    >>> with quiet_messages():
    ...     say("not shown")
    """
    if not quiet:
        yield
        return
    import logging
    import warnings

    import keras

    tensorflow_logger = logging.getLogger("tensorflow")
    level, interactive = tensorflow_logger.level, keras.config.is_interactive_logging_enabled()
    # Without interactive logging Keras sends its progress bars and epoch lines to absl's
    # INFO log, which nothing shows.
    keras.config.disable_interactive_logging()
    tensorflow_logger.setLevel(logging.ERROR)
    _Messages.quiet = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        _Messages.quiet = False
        tensorflow_logger.setLevel(level)
        if interactive:
            keras.config.enable_interactive_logging()


def say(message):
    """Progress and notes go to stderr, so stdout carries only results; none under
    `--quiet`."""
    if not _Messages.quiet:
        print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def stage(title):
    """Announces a step whose progress cannot be measured, then says how long it took."""
    say(f"{title} ...")
    start = time.perf_counter()
    yield
    say(f"{title}: done in {time.perf_counter() - start:.1f} s")


def progress(items, title):
    """A progress bar on stderr around an iterable (tqdm, of the cli extra); none under
    `--quiet`."""
    tqdm = require("tqdm.auto", "kbc's progress bars")
    return tqdm.tqdm(items, desc=title, file=sys.stderr, leave=False, disable=_Messages.quiet)


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
        return BertPreprocessor(vocab_path, seq_length=seq_length, lower_case=casing(cased))
    except ValueError as e:
        message = str(e)
        if "BPE" in message and "cased" in message:
            message = (f"--uncased: {vocab_path} is a byte-level BPE vocabulary (RoBERTa), "
                       "which is always cased; leave --uncased out")
        elif vocab_path not in message:
            message = f"{vocab_path}: {message}"
        raise UserError(message) from None


def vocabulary_size(preprocessor):
    return preprocessor.tokenizer.vocabulary_size()


def read_vocab(path):
    """The tokens of a WordPiece vocab.txt."""
    from keras_bert_core.text import load_vocabulary

    try:
        return load_vocabulary(path)
    except ValueError as e:
        raise UserError(str(e)) from None


def check_fits(config, vocab, vocab_path, seq_length, source):
    """The vocabulary (the one the model was trained with) and the sequence length must fit
    the model's tables. `vocab`: a `BertPreprocessor` or a list of tokens."""
    size = vocabulary_size(vocab) if hasattr(vocab, "tokenizer") else len(vocab)
    try:
        config.check_fits(size, seq_length, same_vocabulary=True,
                          vocabulary=vocab_path, seq_length_name="--seq-length", model=source)
    except ValueError as e:
        raise UserError(str(e)) from None
    if hasattr(vocab, "tokenizer"):
        check_token_types(config, vocab, vocab_path, source)


def check_token_types(config, preprocessor, vocab_path, source):
    """A model with one token type (RoBERTa) cannot read pairs packed with segment id 1, as
    a WordPiece or SentencePiece vocabulary packs them."""
    from keras_bert_core.text.preprocessor import PACKING

    second = PACKING[preprocessor.tokenizer_kind]["second_segment_id"]
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
            f"checkpoint {checkpoint} comes with a {own.kind} one ({own.vocabulary}); use "
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


def training_strategy(options, run_dir=None):
    """The `--strategy` strategy of `options` (`TrainingOptions`); `run_dir` is `--run-dir`.
    Make it first: a multi-worker strategy must exist before any TensorFlow op runs, reading
    the data included."""
    from keras_bert_core.training import distribution_strategy

    if options.strategy == "multi_worker" and not run_dir:
        # A default run directory is named by the clock, which differs between workers.
        raise UserError("--strategy multi_worker needs --run-dir: the same folder on every "
                        "worker, on storage they all see")
    if options.accumulation_steps > 1 and options.strategy in ("mirrored", "multi_worker",
                                                               "tpu"):
        # Keras's accumulation updates the weights inside a conditional, where these
        # strategies cannot synchronize replicas ("merge_call called while defining a new
        # graph"), even with one replica.
        raise UserError(f"--accumulation-steps {options.accumulation_steps} works under "
                        f"--strategy default or one_device, not {options.strategy}; there, "
                        "spread a larger --batch-size over the replicas instead")
    try:
        return distribution_strategy(options.strategy, tpu_address=options.tpu_address)
    except (ValueError, RuntimeError) as e:
        raise UserError(str(e)) from None


@contextlib.contextmanager
def training_scope(options, strategy):
    """Seeds, then enters `strategy`'s scope under the `--mixed-precision` policy of `options`
    (`TrainingOptions`).

    Build models and optimizers inside.
    """
    import keras

    keras.utils.set_random_seed(options.seed)
    previous = keras.config.dtype_policy()
    if options.mixed_precision:
        keras.config.set_dtype_policy(f"mixed_{options.mixed_precision}")
    try:
        with strategy.scope():
            yield strategy
    finally:
        keras.config.set_dtype_policy(previous)


def compile_for_training(model, options, num_train_steps):
    """Compiles a task model with its default loss and `--optimizer` (BERT's AdamW or LAMB)
    on a warmup + linear decay schedule, with XLA if `--xla` (`options`: `TrainingOptions`).

    `num_train_steps` counts batches; with `--accumulation-steps N` every N batches make one
    update, and the schedule warms up and decays over the updates (a last incomplete group
    of batches is left out of the schedule: its update never happens)."""
    from keras_bert_core.optimizers import create_optimizer

    accumulation = options.accumulation_steps
    updates = num_train_steps // accumulation
    if updates < 1:
        raise UserError(f"--accumulation-steps {accumulation} is more than the "
                        f"{num_train_steps} batches of the whole run: no update would happen; "
                        "lower it, or train for more steps")
    optimizer = create_optimizer(options.learning_rate, updates,
                                 int(options.warmup_fraction * updates),
                                 optimizer=options.optimizer,
                                 gradient_accumulation_steps=accumulation)
    model.compile(optimizer=optimizer, jit_compile=True if options.xla else "auto")
