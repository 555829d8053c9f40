"""The package's own exception classes, in one place.

Each says what is wrong and where, in a message meant for the user; `kbc` prints it as one
line (exit status 2, no traceback). Their homes re-export them (`keras_bert_core.text`,
`keras_bert_core.config`, `keras_bert_core.checkpoints`, `keras_bert_core.training`,
`keras_bert_core.cli`), and so does the top level; these are the same classes.

- `DataError`: user data (task files, SQuAD JSON, CoNLL, TFDS examples) — `text/`.
- `ConfigError`: hyperparameters that make no model (`BertConfig`, its JSON files) —
  `config.py`.
- `CheckpointError`, `CheckpointMismatchError`: checkpoints that cannot be read or do not fit
  the model — `checkpoints/`.
- `VocabularyMismatchError`: a vocabulary that does not fit its model's word-embedding table
  (`BertConfig.check_fits`), wherever the two meet: loading, training, exporting.
- `TrainingError`: training that cannot go on — `training/callbacks.py`.
- `FolderLockedError`: a folder another command is writing — `folder_lock.py`.
- `UserError`: a `kbc` option or file that makes no sense — `cli/`.
- `MissingDependencyError`: an optional package a feature needs is not installed — `extras.py`.

This module imports nothing, so the CLI can name these classes without loading TensorFlow.
"""


class DataError(ValueError):
    """A problem in user data, located by file, line and column.

    Args:
        message: what is wrong.
        path: the file, if the data came from one.
        line: 1-based line number in the file.
        column: the column (field name) at fault.

    Example:
    >>> str(DataError("unknown label 'maybe'", path="train.csv", line=7, column="label"))
    "train.csv, line 7, column 'label': unknown label 'maybe'"
    """

    def __init__(self, message, path=None, line=None, column=None):
        self.path = path
        self.line = line
        self.column = column
        where = [str(path)] if path is not None else []
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ConfigError(ValueError):
    """Hyperparameters that make no model: a `BertConfig`, or the JSON file it is read
    from (a checkpoint's config.json, a `--config` file), named in the message.

    Example:
    >>> isinstance(ConfigError("hidden_size 512 is not divisible by num_heads 12"), ValueError)
    True
    """


class CheckpointError(ValueError):
    """A checkpoint that cannot be found, read or understood.

    Example:
    >>> isinstance(CheckpointMismatchError("model.ckpt", missing=["pooler/dense/bias"]),
    ...            CheckpointError)
    True
    """


class CheckpointMismatchError(CheckpointError):
    """Checkpoint weights that do not fit the model, all listed by name.

    Attributes `missing`, `unexpected` and `mis_shaped` hold the lines of the message.

    Example:
    >>> print(CheckpointMismatchError("model.ckpt", missing=["pooler/dense/bias"]))
    model.ckpt: the checkpoint does not match the model
      missing (1):
        pooler/dense/bias
    """

    def __init__(self, source, missing=(), unexpected=(), mis_shaped=()):
        self.missing = list(missing)
        self.unexpected = list(unexpected)
        self.mis_shaped = list(mis_shaped)
        lines = [f"{source}: the checkpoint does not match the model"]
        for title, items in (("missing", self.missing), ("unexpected", self.unexpected),
                             ("mis-shaped", self.mis_shaped)):
            if items:
                lines.append(f"  {title} ({len(items)}):")
                lines.extend(f"    {item}" for item in items)
        super().__init__("\n".join(lines))


class VocabularyMismatchError(CheckpointError):
    """A vocabulary that does not fit the model it is given to (a cut vocab.txt, another
    model's vocabulary): the message names both sizes and both sources. A `CheckpointError`,
    since a model folder whose files disagree cannot be understood.

    Example:
    >>> isinstance(VocabularyMismatchError("vocab.txt has 1,000 tokens..."), ValueError)
    True
    """


class TrainingError(RuntimeError):
    """Training cannot go on (a non-finite loss, a backup that cannot be read): the message
    says why and what to do.

    Example:
    >>> isinstance(TrainingError("the loss became nan at step 3"), RuntimeError)
    True
    """


class FolderLockedError(RuntimeError):
    """A folder (a `kbc` run) that another command holds the writer's lock on; the message
    names that command (pid, host, start time, command line).

    Example:
    >>> isinstance(FolderLockedError("runs/a is being written by pid 7"), RuntimeError)
    True
    """


class UserError(Exception):
    """A problem with what the user gave `kbc`: printed as one line, exit status 2, no traceback.

    Example:
    >>> str(UserError("--epochs must be positive"))
    '--epochs must be positive'
    """


class MissingDependencyError(ImportError):
    """An optional dependency is not installed; the message names the feature that needs it
    and the pip extra that installs it (`keras_bert_core.extras.require` raises it).

    Example:
    >>> isinstance(MissingDependencyError("curves.png needs matplotlib"), ImportError)
    True
    """

