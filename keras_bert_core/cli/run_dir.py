"""Run directories: everything one `kbc` training run writes, in one folder.

    config.json     the command, its arguments, the model's BertConfig, the task settings
    vocab.txt, or vocab.json + merges.txt, or spiece.model, or sentencepiece.bpe.model
                    the vocabulary the model reads: WordPiece, byte-level BPE (RoBERTa)
                    or SentencePiece (ALBERT, XLM-RoBERTa), as
                    `text.vocabulary.files.find_vocabulary` finds them in the folder
    tokenizer_config.json
                    its casing (`do_lower_case`; runs saved before it have vocab.txt
                    alone, their casing in config.json's task settings or arguments)
    model.keras     the trained model; after `kbc finetune --lora`, the merged model (kernels
                    W + alpha / rank * A B, no adapters), which evaluate, predict and
                    export read as any other
    adapters.lora.h5
                    `--lora` runs: what trained, alone (the adapters and the task head, as
                    `save_lora_weights` writes them); `load_lora_weights` puts them on a
                    model holding the weights of the run's --checkpoint
    metrics.json    the final metrics
    curves.png      loss and accuracy curves (matplotlib, Agg)
    backup/ checkpoints/ logs/ metrics.jsonl
                    written during `fit` by `keras_bert_core.training.training_callbacks`:
                    the backups `--resume` continues from (every `--backup-every` steps;
                    with the LoRA adapters unmerged), weight checkpoints (Keras weight
                    files: merged kernels in a LoRA run), TensorBoard logs, and metrics
                    every few steps and at every epoch end

config.json holds absolute paths, so `--resume` works from any working directory; every
file is written beside its place and renamed into it when complete, and model.keras
appears only when training has finished. While a command writes the folder, writer.lock in
it names that command (`run_lock`): no second command writes the run meanwhile.

Under a multi-worker strategy every worker names the same folder, on storage they all see;
only the chief writes these files (each worker keeps its own backup there).
"""

import functools
import glob
import json
import math
import os
import time

from keras_bert_core import __version__
from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.model_building import CONFIG_FILE, MODEL_FILE, VOCAB_FILE
from keras_bert_core.cli.run_lock import holds_lock, lock_run, release_run
from keras_bert_core.cli.training_data import fingerprints
from keras_bert_core.extras import require
from keras_bert_core.files import overlaps, partial_path, remove, replaced_when_complete
from keras_bert_core.folder_lock import LOCK_FILE

METRICS_FILE = "metrics.json"
LORA_FILE = "adapters.lora.h5"
CURVES_FILE = "curves.png"
# What `--overwrite` may replace as a run folder (see `claim_output`).
RUN_FOLDER = ("a kbc run", (CONFIG_FILE,))
# Arguments naming files or folders: config.json stores them absolute.
PATH_ARGUMENTS = ("inputs", "vocab", "checkpoint", "config", "train", "validation", "run_dir",
                  "tfds_data_dir", "teacher", "unlabeled")


def default_run_dir(name):
    return os.path.join("runs", f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def claim_output(path, overwrite=False, make_parent=False, inputs=(), kind=None):
    """Checks that `path` (a file or folder about to be written) may be written: an existing
    one is an error unless `overwrite`; the nearest existing folder above it must be
    writable. With `make_parent`, missing parent folders are created. Nothing is removed
    here: write the output with `files.replaced_when_complete`, so that a failed command
    leaves the old one in place.

    `inputs` are the files and folders the same command reads: an output that is or holds
    one of them is refused, and so is replacing an existing output inside one of them (a
    new output inside an input folder, e.g. an export inside its run, is fine).

    `kind`: `(what the output is, glob patterns of what the command writes in it if it is a
    folder; none for a file)`. `overwrite` replaces an existing folder only if it is empty
    or holds a match, so that an output given by mistake (`--output ~/thesis --overwrite`)
    deletes nothing.
    """
    clash = overlaps(path, [p for p in inputs if p])
    if clash and (clash[1] != "is inside" or (overwrite and os.path.lexists(path))):
        given, how = clash
        raise UserError(f"the output {path} {how} the input {given}; choose another output")
    if os.path.lexists(path):
        if not overwrite:
            raise UserError(f"{path} already exists; pass --overwrite to replace it, or "
                            "choose another output")
        if kind:
            _check_replaceable(path, *kind)
    parent = os.path.dirname(os.path.abspath(path))
    existing = parent
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK):
        problem = "is not a folder" if not os.path.isdir(existing) else "is not writable"
        raise UserError(f"cannot write {path}: {existing} {problem}")
    if make_parent:
        os.makedirs(parent, exist_ok=True)


def enclosing_run(path):
    """The `kbc` run folder that `path` (an output about to be written) lies inside, or
    None."""
    from keras_bert_core.presets.runs import find_run

    folder = os.path.dirname(os.path.abspath(path))
    while not (os.path.isdir(folder) and find_run(folder)):
        if os.path.dirname(folder) == folder:
            return None
        folder = os.path.dirname(folder)
    return folder


def check_run_writers():
    """A run writes TensorBoard logs while it trains and curves.png at its end, with
    packages of the cli extra: one that is missing is said before anything is written."""
    for module in ("tensorboard", "matplotlib"):
        require(module, "a kbc training run")


def _check_replaceable(path, what, patterns):
    """Refuses to replace a folder that holds files but none matching `patterns` (see
    `claim_output`'s `kind`)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return
    names = set(os.listdir(path)) - {LOCK_FILE}
    if names and not any(glob.glob(os.path.join(glob.escape(path), pattern))
                         for pattern in patterns):
        lacks = f" (it has no {' or '.join(patterns)})" if patterns else ""
        raise UserError(f"{path} is a folder of files, not {what}{lacks}: --overwrite "
                        f"replaces only {what}; choose another output")


def _chief_only(write):
    """Makes `write` do nothing on the workers of a multi-worker run but the chief."""

    @functools.wraps(write)
    def chief_writes(self, *args, **kwargs):
        return write(self, *args, **kwargs) if self.chief else None

    return chief_writes


class RunDirectory:
    """The folder of one training run (see the module docstring for its files).

    Args:
        path: the folder.
        strategy: the strategy training runs under (default: the current one). On the
            workers of a multi-worker strategy but the chief, the writes are skipped.

    Example:
    >>> import tempfile
    >>> run = RunDirectory.create(os.path.join(tempfile.mkdtemp(), "run"))
    >>> run.write_json(METRICS_FILE, {"accuracy": 0.9})
    >>> run.read_json(METRICS_FILE)
    {'accuracy': 0.9}
    >>> run.release()
    """

    def __init__(self, path, strategy=None):
        self.path = path
        self.strategy = strategy

    @property
    def chief(self):
        from keras_bert_core.training import worker_role

        return worker_role(self.strategy)[0]

    @classmethod
    def create(cls, path, overwrite=False, strategy=None, inputs=()):
        """A new, empty run directory; an existing one only with `overwrite` (see `claim`):
        emptied under this command's lock, so never while another command writes it."""
        run = cls(path, strategy)
        if run.chief:
            if not holds_lock(path):
                run.claim(overwrite, inputs)
            if os.path.islink(path) or not os.path.isdir(path):  # a file or link replaced
                remove(path)
            lock_run(path)
            for name in os.listdir(path):
                if name != LOCK_FILE:
                    remove(os.path.join(path, name))
        return run

    def claim(self, overwrite=False, inputs=(), resume=False):
        """Takes the folder for this command: locks it (`run_lock`: a folder another command
        writes is refused, naming it) and checks that `create` can make it: an existing one
        is an error unless `overwrite` (`create` empties it), and it must not be, hold or lie
        inside any of the `inputs` the command reads (see `claim_output`). With `resume`, the
        folder is the run to continue: it is only locked. Only the chief claims the folder:
        the other workers write into the chief's, so they must leave it alone."""
        if not self.chief:
            return
        check_run_writers()
        existed = os.path.lexists(self.path)
        if resume or (os.path.isdir(self.path) and not os.path.islink(self.path)):
            lock_run(self.path)  # before anything is checked or replaced
        if resume:
            return
        try:
            claim_output(self.path, overwrite, inputs=inputs, kind=RUN_FOLDER)
        except BaseException:
            release_run(self.path)
            raise
        if not existed:
            lock_run(self.path)  # makes the folder

    def release(self):
        """Ends this process's lock on the folder (a `kbc` command's ends with it)."""
        release_run(self.path)

    @classmethod
    def open(cls, path, strategy=None):
        """An existing run directory, as written by `create` and `write_config`."""
        if not os.path.isfile(os.path.join(path, CONFIG_FILE)):
            raise UserError(f"{path} is not a kbc run directory (it has no {CONFIG_FILE})")
        return cls(path, strategy)

    def file(self, name):
        return os.path.join(self.path, name)

    @_chief_only
    def write_json(self, name, values):
        with replaced_when_complete(self.file(name)) as partial:
            with open(partial, "w", encoding="utf-8") as f:
                json.dump(values, f, indent=2)
                f.write("\n")

    def read_json(self, name):
        with open(self.file(name), encoding="utf-8") as f:
            return json.load(f)

    def write_config(self, args, model_config=None, task=None):
        """Records the command line's arguments, the model's `BertConfig`, the task
        settings (what `evaluate` and `predict` need to read data as training did) and the
        training files' fingerprints (which `--resume` checks)."""
        import keras
        import tensorflow as tf

        if not self.chief:
            return
        arguments = {k: absolute(v) if k in PATH_ARGUMENTS else v
                     for k, v in vars(args).items() if k not in ("module", "command")}
        self.write_json(CONFIG_FILE, {
            "command": args.command,
            "arguments": arguments,
            "training_data": fingerprints(arguments),
            "model_config": model_config.to_dict() if model_config is not None else None,
            "task": task,
            "versions": {"keras_bert_core": __version__, "keras": keras.__version__,
                         "tensorflow": tf.__version__},
        })

    def config(self):
        return self.read_json(CONFIG_FILE)

    def write_metrics(self, metrics):
        self.write_json(METRICS_FILE, metrics)

    @_chief_only
    def write_tokenizer(self, tokenizer):
        """Writes the files of `tokenizer` (a tokenizer layer of any kind, or a
        `BertPreprocessor`'s) with its casing in tokenizer_config.json."""
        from keras_bert_core.text.vocabulary.files import write_vocabulary_files

        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
        partial = partial_path(self.file("tokenizer"))  # each file renamed in once complete
        os.makedirs(partial)
        try:
            for name, written in write_vocabulary_files(tokenizer, partial).items():
                os.replace(written, self.file(name))
        finally:
            remove(partial)

    @_chief_only
    def write_vocab(self, tokens):
        """Writes a WordPiece vocab.txt (`write_tokenizer` writes any kind)."""
        with replaced_when_complete(self.file(VOCAB_FILE)) as partial:
            with open(partial, "w", encoding="utf-8") as f:
                f.writelines(token + "\n" for token in tokens)

    @_chief_only
    def save_model(self, model):
        """Writes model.keras; for a model with LoRA adapters, first its adapters alone
        (adapters.lora.h5), then the merged model as model.keras (`merge_lora`: a plain
        model of the same outputs, which every command reads as any other)."""
        from keras_bert_core.models.lora import has_lora, merge_lora, save_lora_weights

        if has_lora(model):
            with replaced_when_complete(self.file(LORA_FILE)) as partial:
                save_lora_weights(model, partial)
            model = merge_lora(model)
        with replaced_when_complete(self.file(MODEL_FILE)) as partial:
            model.save(partial)

    def fit(self, model, dataset, epochs, steps_per_epoch, backup_every=50,
            checkpoint_every_epochs=1, log_every_steps=50, **fit_kwargs):
        """`fit_resumable` into this run: continues from its newest backup, if any, with
        backups (for `--resume`), checkpoints, TensorBoard logs and `metrics.jsonl`."""
        from keras_bert_core.training import fit_resumable, training_callbacks

        check_run_writers()
        done = self.completed_steps()
        if done:
            say(f"resuming {self.path} after step {done} of {epochs * steps_per_epoch}")
        callbacks = training_callbacks(
            self.path, checkpoint_every_epochs=checkpoint_every_epochs,
            log_every_steps=log_every_steps, backup_every_steps=backup_every,
            strategy=self.strategy)
        return fit_resumable(model, dataset, self.path, epochs=epochs,
                             steps_per_epoch=steps_per_epoch, callbacks=callbacks, **fit_kwargs)

    def completed_steps(self):
        from keras_bert_core.training import completed_steps

        return completed_steps(self.path, self.strategy)

    def epoch_metrics(self):
        """The epoch-end records of `metrics.jsonl`, oldest first (none on the workers but
        the chief, which writes it)."""
        path = self.file("metrics.jsonl")
        if not self.chief or not os.path.isfile(path):
            return []
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        return [r for r in records if r["event"] == "epoch"]

    @_chief_only
    def plot_curves(self, title, path=None):
        """Draws every logged loss and accuracy against the training step into
        `curves.png` (or `path`); returns the file written, or None before any epoch."""
        matplotlib_figure = require("matplotlib.figure", CURVES_FILE)

        records = self.epoch_metrics()
        if not records:
            return None
        steps = [r["step"] for r in records]
        figure = matplotlib_figure.Figure(figsize=(11, 4), layout="constrained")
        for axes, kind in zip(figure.subplots(1, 2), ("loss", "accuracy"), strict=True):
            for key in sorted({k for r in records for k in r if k.endswith(kind)}):
                axes.plot(steps, [r.get(key, math.nan) for r in records], marker="o",
                          markersize=3, label=key)
            axes.set(title=kind, xlabel="step")
            axes.grid(alpha=0.3)
            if axes.has_data():
                axes.legend()
        figure.suptitle(title)
        path = path or self.file(CURVES_FILE)
        with replaced_when_complete(path) as partial:
            figure.savefig(partial, dpi=100, format="png")
        return path


def absolute(value):
    """A path argument's value (a path, a list of them, or None) with absolute paths."""
    if isinstance(value, list):
        return [absolute(v) for v in value]
    return os.path.abspath(value) if isinstance(value, str) and value else value
