"""Training setup from `TrainingOptions`: the distribution strategy, the scope models are
built in (seed, mixed precision), compiling with the optimizer and its schedule, and the
number of full batches."""

import contextlib

from keras_bert_core.cli import UserError


def full_batches(rows, batch_size, data="the training data"):
    """Full batches in `rows`; fewer rows than one batch is the user's error."""
    if rows < batch_size:
        raise UserError(f"{data} has {rows} rows, fewer than --batch-size {batch_size}")
    return rows // batch_size


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


def compile_for_training(model, options, num_train_steps, **compile_arguments):
    """Compiles a task model with its default loss (or `compile_arguments`' loss, from its
    task) and `--optimizer` (BERT's AdamW or LAMB) on a warmup + linear decay schedule, with
    XLA if `--xla` (`options`: `TrainingOptions`).

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
    model.compile(optimizer=optimizer, jit_compile=True if options.xla else "auto",
                  **compile_arguments)
