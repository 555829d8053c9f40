"""The options the subcommands share: argument groups (`add_vocab_options`,
`add_model_options`, `add_training_options`, `add_run_options`), the argparse types they
use, and the option objects parsed arguments become (`ModelOptions`, `TrainingOptions`)."""

import argparse
import dataclasses

from keras_bert_core.config import PRESETS

# `--optimizer` and `--strategy` choices: `optimizers.create_optimizer`'s and
# `training.distribution.STRATEGIES` (not imported here: both modules load TensorFlow, and
# `kbc --help` must answer without it; tests/cli/test_training_flags.py checks they agree).
OPTIMIZERS = ("adamw", "lamb")
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")


# What `--vocab` takes, for every command that reads one; each adds its own note.
VOCAB_HELP = ("the vocabulary: a WordPiece vocab.txt (BERT, DistilBERT), a byte-level BPE "
              "vocab.json with merges.txt beside it (RoBERTa), a SentencePiece .model "
              "(ALBERT), or a folder holding one")


def add_vocab_options(parser, seq_length, vocab_note=" (e.g. from `kbc vocab --kind bpe`)",
                      seq_length_help=""):
    group = parser.add_argument_group("text")
    group.add_argument("--vocab", metavar="PATH", help=VOCAB_HELP + vocab_note)
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
                            "roberta_*, xlm_roberta_*, albert_*, distilbert_base")
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
    group.add_argument("--learning-rate", type=positive_float, default=learning_rate,
                       help="peak learning rate (linear warmup then linear decay)")
    group.add_argument("--warmup-fraction", type=fraction_below_one, default=warmup_fraction,
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
                            "arguments it was started with: other values given for them are "
                            "refused (--backup-every may change), and so is a training file "
                            "that changed since the run started")
    group.add_argument("--allow-changed-data", action="store_true",
                       help="with --resume: continue even though a training file changed "
                            "since the run started (its size and sha256 are in the run's "
                            "config.json); the batches skipped are counted in the old data")


def _number(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def rate(text):
    """argparse type: a fraction above 0, at most 1."""
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not in (0, 1]")
    return value


def fraction_below_one(text):
    """argparse type: a fraction of at least 0, below 1."""
    value = _number(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not in [0, 1)")
    return value


def positive_float(text):
    """argparse type: a number above 0."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} is not above 0")
    return value


def non_empty(text):
    """argparse type: text of at least one character (a column name, a delimiter)."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


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
