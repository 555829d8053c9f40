"""`--resume`: the arguments a run started with, to continue it, and the checks that it
continues as it started: options given on the command line that it cannot honour, and
training files changed since, are refused."""

import argparse

from keras_bert_core.cli import UserError
from keras_bert_core.cli.run_dir import PATH_ARGUMENTS, RunDirectory, absolute
from keras_bert_core.cli.training_data import check_unchanged

# What a resumed run takes from its command line; every other option is the run's own.
# --backup-every changes no step (backups fall on multiples of it); the rest are messages
# and the data check itself.
RESUME_MAY_CHANGE = ("backup_every",)
PER_COMMAND = ("quiet", "tf_logs", "allow_changed_data")
NOT_OPTIONS = ("command", "module", "run_dir", "resume", "given_options")
# Options whose names are not their argument's (positional arguments, store_false flags).
OPTION_NAMES = {"inputs": "FILE", "next_sentence": "--no-next-sentence"}


def resumed_arguments(args, older_defaults=None):
    """`(arguments, saved config)` to continue the run in `--run-dir` (`--resume`): the
    arguments it was started with, over this command line's defaults (so options added
    since then have their defaults), then `older_defaults` for runs saved before an option
    existed whose default has changed. The run's own copy of the vocabulary (the run
    folder, where `find_vocabulary` finds its files of any kind) replaces `--vocab`, and
    its backup replaces `--checkpoint`.

    Options given on the command line (`args.given_options`, as `kbc` parses them) that
    differ from the run's are refused, but for `RESUME_MAY_CHANGE`; so is a training file
    that changed since the run started, unless `--allow-changed-data`."""
    if not args.run_dir:
        raise UserError("--resume needs --run-dir, the run to continue")
    run = RunDirectory.open(args.run_dir)
    saved = run.config()
    if saved.get("command") != args.command:
        raise UserError(f"{args.run_dir} is a `kbc {saved.get('command')}` run, not a "
                        f"`kbc {args.command}` run; continue it with `kbc "
                        f"{saved.get('command')} --resume --run-dir {args.run_dir}`")
    given = getattr(args, "given_options", ())
    arguments = {**vars(args), **(older_defaults or {}), **saved["arguments"],
                 "overwrite": False}
    _check_given(args, given, arguments)
    arguments.update({name: getattr(args, name) for name in RESUME_MAY_CHANGE if name in given})
    arguments.update({name: getattr(args, name, None) for name in PER_COMMAND})
    check_unchanged(args.run_dir, saved.get("training_data"), arguments,
                    args.allow_changed_data)
    arguments.update({"run_dir": args.run_dir, "resume": True, "vocab": run.path,
                      "checkpoint": None})
    arguments.pop("given_options", None)
    return argparse.Namespace(**arguments), saved


def _check_given(args, given, arguments):
    """Refuses the options of `given` whose values differ from the run's `arguments`."""
    ignored = []
    for name in sorted(given):
        if name in (*NOT_OPTIONS, *RESUME_MAY_CHANGE, *PER_COMMAND):
            continue
        value = getattr(args, name)
        if (absolute(value) if name in PATH_ARGUMENTS else value) != arguments.get(name):
            option = OPTION_NAMES.get(name, "--" + name.replace("_", "-"))
            shown = "" if isinstance(value, bool) else f" {_shown(value)}"
            ignored.append(f"{option}{shown} (the run has {_shown(arguments.get(name))})")
    if ignored:
        allowed = ", ".join("--" + name.replace("_", "-") for name in RESUME_MAY_CHANGE)
        raise UserError(f"--resume continues {args.run_dir} with the options it started with "
                        f"and cannot honour {', '.join(ignored)}; leave them out (only "
                        f"{allowed} may change), or start a new run")


def _shown(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return " ".join(map(str, value))
    return "none" if value is None else str(value)
