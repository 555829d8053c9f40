"""The `kbc` command: one subcommand per module in this package.

Subcommand modules import TensorFlow inside `run`, never at import time, so `kbc --help`
answers at once.
"""

import argparse
import importlib
import os
import platform
import sys

from keras_bert_core import __version__
from keras_bert_core.errors import (
    CheckpointError,
    ConfigError,
    DataError,
    FolderLockedError,
    MissingDependencyError,
    TrainingError,
    UserError,
)

# Subcommand name -> (module in this package exposing `add_arguments(parser)` and
# `run(args)`, one-line summary).
COMMANDS = {
    "vocab": ("vocab", "learn a WordPiece, byte-level BPE or SentencePiece vocabulary"),
    "pretrain": ("pretrain", "pretrain BERT, RoBERTa, ALBERT or DistilBERT on text or TFRecords"),
    "finetune": ("finetune", "fine-tune on a task: classify, pair, squad, ner, choice, embed"),
    "distill": ("distill", "distill a fine-tuned model into a smaller student"),
    "evaluate": ("evaluate", "score a fine-tuned model on labeled data"),
    "embed": ("embed", "the vectors of texts by an embedding model, as .npy or JSON lines"),
    "predict": ("predict", "run a fine-tuned model or an export on texts from a file or stdin"),
    "export": ("export", "export a fine-tuned model as a SavedModel, TFLite files and/or a "
                         "preset folder (kbc.from_preset)"),
    "convert": ("convert", "convert a Hugging Face / TF1 / Model Garden checkpoint to .keras"),
    "demo": ("demo", "vocab, pretraining, fine-tuning and exports on Python's docstrings"),
}


TRAINING_COMMANDS = ("pretrain", "finetune", "distill", "demo")


def training_environment(machine):
    """TensorFlow's environment variables that the commands that train set, unless the user
    did, on a CPU `machine` (`platform.machine()`): both are read when TensorFlow loads.

    - `TF_CPU_ALLOCATOR_USE_BFC`: TensorFlow's pooling allocator for CPU tensors. With plain
      malloc every tensor over glibc's 32 MB mmap limit (masked-LM logits, the embedding
      table's gradient) is fresh pages, faulted in and zeroed again at every step, for every
      framework alike.
    - `TF_ENABLE_ONEDNN_OPTS` on x86: TensorFlow leaves oneDNN's kernels off on x86 CPUs
      without AVX-512 VNNI or AMX. Training steps run faster with them, but one text at a
      time is predicted slower (`kbc demo`'s latency check shows it), so only training
      turns them on.

    Figures: bench/RESULTS.md (our steps in both environments).

    Example:
    >>> training_environment("x86_64")
    {'TF_CPU_ALLOCATOR_USE_BFC': 'true', 'TF_ENABLE_ONEDNN_OPTS': '1'}
    """
    environment = {"TF_CPU_ALLOCATOR_USE_BFC": "true"}
    if machine.lower() in ("x86_64", "amd64"):
        environment["TF_ENABLE_ONEDNN_OPTS"] = "1"
    return environment


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless there is none to show: an option that takes no
    value (a `--no-...` flag's default True says nothing to a user) or whose help names its
    default already."""

    def _get_help_string(self, action):
        if (action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0
                or "default:" in action.help.lower()):
            return action.help
        return super()._get_help_string(action)


def build_parser(defaults=None):
    """The `kbc` parser; `defaults` (argument name -> value) replace every subcommand's own."""
    parser = argparse.ArgumentParser(
        prog="kbc",
        description="BERT for TensorFlow/Keras 3: pretrain, fine-tune, export, serve.")
    parser.add_argument("--version", action="version", version=f"keras_bert_core {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        sub = subcommands.add_parser(
            name, help=summary, description=summary,
            formatter_class=_HelpFormatter)
        importlib.import_module(f"keras_bert_core.cli.{module_name}").add_arguments(sub)
        add_message_options(sub)
        sub.set_defaults(**{"module": module_name, **(defaults or {})})
    return parser


def add_message_options(parser):
    """`--quiet` and `--tf-logs`, which every command takes."""
    group = parser.add_argument_group("messages")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="print only errors and the result: no progress bars, Keras step "
                            "logs, notes or summaries")
    group.add_argument("--tf-logs", action="store_true",
                       help="show TensorFlow's C++ log, which kbc hides (unless "
                            "TF_CPP_MIN_LOG_LEVEL is set)")


def given_options(argv, args):
    """The names of the arguments that `argv` gives, whatever their values (`args` is
    `argv` parsed): `argv` parsed again with every default replaced by a marker."""
    marker = object()
    again = build_parser(dict.fromkeys(vars(args), marker)).parse_args(argv)
    return {name for name, value in vars(again).items() if value is not marker}


def user_error_message(error):
    """The one-line message for an exception caused by the user's input, else `None`.

    The library reports bad data, configurations, checkpoints and vocabularies with its own
    exception types;
    missing or unwritable files surface as `OSError`s that name the file; a missing optional
    package as a `MissingDependencyError` that names its pip extra.
    """
    if isinstance(error, (UserError, DataError, CheckpointError, ConfigError, TrainingError,
                          MissingDependencyError, FolderLockedError)):
        return str(error)
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    if isinstance(error, FileNotFoundError):  # raised with a message naming the pattern
        return str(error)
    return None


# The arguments that take a checkpoint, a preset or a run: each also takes a Hub name.
HUB_NAME_ARGUMENTS = ("checkpoint", "source", "model", "teacher", "student")


def resolve_hub_names(args):
    """Replaces each Hub name (`hf://org/name[@revision]`) in `args` by its local snapshot
    folder, downloaded or found in the Hub's cache, as `kbc.from_preset` does."""
    from keras_bert_core.checkpoints.hub_names import is_hub_name, resolve

    for name in HUB_NAME_ARGUMENTS:
        if is_hub_name(getattr(args, name, None)):
            setattr(args, name, resolve(getattr(args, name)))


def main(argv=None):
    from keras_bert_core.cli.messages import load_tensorflow_quietly, quiet_messages
    from keras_bert_core.cli.run_lock import command_writes

    parser = build_parser()
    args = parser.parse_args(argv)  # loads no TensorFlow
    if args.command is None:
        parser.print_help()
        return 0
    # TensorFlow's C++ start-up lines (even "failed call to cuInit" on machines without a
    # GPU, logged as an error) are noise to a user: hidden unless asked for with --tf-logs;
    # TF_CPP_MIN_LOG_LEVEL set by the user wins over the default.
    if args.tf_logs:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.command in TRAINING_COMMANDS:  # before TensorFlow loads
        for name, value in training_environment(platform.machine()).items():
            os.environ.setdefault(name, value)
    load_tensorflow_quietly()
    try:
        with quiet_messages(args.quiet), command_writes(sys.argv[1:] if argv is None else argv):
            if getattr(args, "resume", False):  # which options it must refuse
                args.given_options = given_options(argv, args)
            elif getattr(args, "allow_changed_data", False):
                raise UserError("--allow-changed-data goes with --resume, which checks the "
                                "training data against the run's")
            resolve_hub_names(args)
            code = importlib.import_module(f"keras_bert_core.cli.{args.module}").run(args) or 0
            sys.stdout.flush()  # here, so that a reader gone by now is caught below
        return code
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt:
        print(f"kbc {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        message = user_error_message(error)
        if message is None:
            raise
        print(f"kbc {args.command}: error: {message}", file=sys.stderr)
        return 2


def _reader_gone():
    """Ends a command whose standard output was closed by its reader (`kbc predict ... |
    head -1`): quietly, with exit status 141 (128 + SIGPIPE), which the shell reports for
    `cat`, `grep` and any tool the signal ends, so a script tells a cut-off output from a
    complete one (0) as it does for those. Python ignores SIGPIPE and raises
    BrokenPipeError instead; what is left in stdout's buffer goes to /dev/null, so that
    Python's own flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor (captured, closed)
        pass
    return 141
