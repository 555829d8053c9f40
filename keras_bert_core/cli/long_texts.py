"""`kbc finetune`'s options for texts longer than `--seq-length`: cut them (as before), or
read them as overlapping windows (`kbc.LongTextPreprocessor`) that the model joins."""

from keras_bert_core.cli import UserError

# The tasks that read long texts as windows (`Task.preprocessor_for`).
WINDOWED_TASKS = ("classify", "multilabel", "ner")
# The tasks whose windows' logits join into the text's (the others tag each word).
AGGREGATING_TASKS = ("classify", "multilabel")
# `layers.window_aggregation.AGGREGATIONS` (importing it would load TensorFlow for --help).
AGGREGATIONS = ("mean", "max", "attention")
DEFAULT_MAX_WINDOWS = 16


def add_long_text_options(parser):
    group = parser.add_argument_group("long texts (classify, multilabel, ner)")
    group.add_argument("--long-texts", choices=("cut", "windows"),
                       help="texts longer than --seq-length: cut (default) or read as "
                            "overlapping windows of --seq-length, inside the model and both "
                            "exports (one long text in, one answer out)")
    group.add_argument("--stride", type=int, metavar="N",
                       help="with --long-texts windows: wordpieces between the starts of a "
                            "text's windows (default: half a window)")
    group.add_argument("--max-windows", type=int, metavar="K",
                       help=f"with --long-texts windows: the most windows of a text; later "
                            f"pieces are cut (default {DEFAULT_MAX_WINDOWS})")
    group.add_argument("--window-aggregation", choices=AGGREGATIONS,
                       help="classify, multilabel with --long-texts windows: how the "
                            "windows' logits join: mean (default), max, or attention (a "
                            "learned weight per window)")


def long_text_settings(args):
    """The task settings the long-text options give (`{}` without `--long-texts
    windows`), checked against the task and `--seq-length`."""
    given = [f"--{name.replace('_', '-')}" for name in
             ("stride", "max_windows", "window_aggregation") if getattr(args, name) is not None]
    if args.long_texts != "windows":
        if given:
            raise UserError(f"{' and '.join(given)} without --long-texts windows: add it, "
                            "or leave them out")
        return {}
    if args.task not in WINDOWED_TASKS:
        raise UserError(f"--long-texts windows is for --task {' or '.join(WINDOWED_TASKS)}, "
                        f"not {args.task}")
    if args.window_aggregation is not None and args.task not in AGGREGATING_TASKS:
        raise UserError(f"--window-aggregation is for --task classify or multilabel, not "
                        f"{args.task} (a tagger takes each word from its most central window)")
    room = args.seq_length - 2
    stride = room // 2 if args.stride is None else args.stride
    if not 1 <= stride <= room:
        raise UserError(f"--stride {stride}: must be between 1 and {room} (--seq-length "
                        f"{args.seq_length} less [CLS] and [SEP])")
    max_windows = DEFAULT_MAX_WINDOWS if args.max_windows is None else args.max_windows
    if max_windows < 1:
        raise UserError(f"--max-windows {max_windows}: must be at least 1")
    settings = {"long_texts": "windows", "stride": stride, "max_windows": max_windows}
    if args.task in AGGREGATING_TASKS:
        settings["window_aggregation"] = args.window_aggregation or "mean"
    return settings
