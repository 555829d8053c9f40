"""The `kbc` command: one subcommand per module in this package."""

import argparse
import importlib
import os
import sys

from keras_bert_core import __version__

# Subcommand name -> module in this package exposing `add_arguments(parser)` and `run(args)`.
COMMANDS = {}


class UserError(Exception):
    """A problem with what the user gave: printed as one line, exit status 2, no traceback."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="kbc",
        description="BERT for TensorFlow/Keras 3: pretrain, fine-tune, export, serve.")
    parser.add_argument("--version", action="version", version=f"keras_bert_core {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        sub = subcommands.add_parser(name, help=summary, description=summary)
        importlib.import_module(f"keras_bert_core.cli.{module_name}").add_arguments(sub)
        sub.set_defaults(module=module_name)
    return parser


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return importlib.import_module(f"keras_bert_core.cli.{args.module}").run(args) or 0
    except UserError as e:
        print(f"kbc {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kbc {args.command}: interrupted", file=sys.stderr)
        return 130
