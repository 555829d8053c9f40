"""`kbc finetune`: train a task model from a checkpoint (any format) or from scratch."""


from keras_bert_core.cli import UserError
from keras_bert_core.cli.long_texts import add_long_text_options, long_text_settings
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.model_building import (
    build_encoder,
    check_fits,
    check_model_options,
    check_same_kind,
    checkpoint_model,
    find_vocab,
    make_preprocessor,
)
from keras_bert_core.cli.options import (
    ModelOptions,
    TrainingOptions,
    add_model_options,
    add_run_options,
    add_training_options,
    add_vocab_options,
    positive_float,
    positive_int,
)
from keras_bert_core.cli.resume import resumed_arguments
from keras_bert_core.cli.run_dir import (
    LORA_FILE,
    RunDirectory,
    default_run_dir,
)
from keras_bert_core.cli.tasks import (
    EMBED_LOSSES,
    TASK_NAMES,
    add_data_options,
    data_settings,
    load_tfds,
    task_for,
)
from keras_bert_core.cli.training_setup import (
    compile_for_training,
    full_batches,
    training_scope,
    training_strategy,
)

DEFAULT_SEQ_LENGTH = 128


def add_arguments(parser):
    parser.add_argument("--task", choices=TASK_NAMES,
                        help="classify: a text -> label (CSV/TSV/JSONL); pair: two texts -> "
                             "label; multilabel: a text -> any number of labels (CSV/TSV: "
                             "joined by --label-delimiter; JSONL: a list), thresholds tuned "
                             "on --validation; squad: SQuAD JSON; ner: CoNLL; choice: "
                             "JSONL; embed: an embedding model on pairs (CSV/TSV/JSONL: "
                             "anchor, positive[, negative] or text1, text2, score)")
    data = parser.add_argument_group("data sources")
    data.add_argument("--train", metavar="FILE", help="training data")
    data.add_argument("--validation", metavar="FILE", help="validation data, scored each epoch")
    data.add_argument("--tfds", metavar="NAME",
                      help="a TensorFlow Datasets task instead of files: glue/<task>, squad, "
                           "squad/v2.0, conll2003")
    data.add_argument("--train-split", default="train", help="--tfds training split")
    data.add_argument("--validation-split", default="validation",
                      help="--tfds validation split ('' for none)")
    data.add_argument("--tfds-data-dir", metavar="DIR", help="where TFDS keeps its data")
    add_data_options(parser)
    parser.add_argument("--regression", action="store_true",
                        help="classify/pair: the label is a number (a score, as STS-B's): "
                             "the model predicts it (mean squared error) instead of a class")
    add_embed_options(parser)
    add_long_text_options(parser)
    add_vocab_options(parser, seq_length=None,
                      seq_length_help=f"(default: the length --checkpoint was trained with, "
                                      f"if it is a preset or a fine-tuning or distillation "
                                      f"run, else {DEFAULT_SEQ_LENGTH})",
                      vocab_note=" (default: the one in --checkpoint's folder)")
    parser.add_argument("--checkpoint", metavar="PATH",
                        help="pretrained weights: a Hugging Face folder (BERT, RoBERTa, "
                             "ALBERT, DistilBERT), a google-research or Model Garden "
                             "checkpoint, a .keras file, a kbc run or a preset folder "
                             "(kbc export --format preset), or a Hugging Face Hub name "
                             "(hf://org/name[@revision]); the model's family "
                             "brings its own classification head and packing. Default: a "
                             "new model from --preset/--config")
    add_model_options(parser)
    add_training_options(parser, batch_size=32, learning_rate=5e-5)
    parser.add_argument("--epochs", type=positive_int, default=3,
                        help="passes over the training data")
    add_lora_options(parser)
    add_run_options(parser)


def add_embed_options(parser):
    group = parser.add_argument_group("embedding models (--task embed)")
    group.add_argument("--loss", choices=EMBED_LOSSES,
                       help="contrastive: in-batch negatives (and a negative column's); "
                            "symmetric: also each positive finds its anchor; triplet: anchor, "
                            "positive, negative with a margin; cosine: scored pairs. Default: "
                            "cosine for scored pairs, else contrastive")
    group.add_argument("--scale", type=positive_float,
                       help="contrastive and symmetric: the factor on cosine similarities "
                            "(1 / temperature; default 20)")
    group.add_argument("--matryoshka-dims", type=positive_int, nargs="+", metavar="DIM",
                       help="also train the vectors cut to each of these widths (Matryoshka), "
                            "so they can be cut to save memory, e.g. 384 256 128 64")
    group.add_argument("--length-buckets", nargs="+", metavar="LENGTH",
                       help="training pads each column of a batch (queries, documents) to the "
                            "smallest of these lengths that holds its longest text: 'auto' "
                            "(default: up to 8 multiples of 8 up to --seq-length), 'none' "
                            "(every column to --seq-length), or lengths, e.g. 32 64")


def add_lora_options(parser):
    # The names are checked against keras_bert_core.models.lora in `run`: importing it here
    # would load TensorFlow for `kbc --help`.
    group = parser.add_argument_group("LoRA (low-rank adapters)")
    group.add_argument("--lora", type=positive_int, metavar="RANK",
                       help="train rank-RANK adapters on the encoder's projections and the "
                            "task head only, the rest of the encoder frozen; the run also "
                            f"holds the adapters alone ({LORA_FILE}), model.keras the merged "
                            "model. LoRA usually wants a larger --learning-rate, e.g. 5e-4")
    group.add_argument("--lora-targets", nargs="+", metavar="NAME",
                       help="projections to adapt in every block (default: query value): "
                            "query, key, value, attention_output, intermediate, output, or "
                            "the groups attention, feed_forward, all")
    group.add_argument("--lora-alpha", type=positive_float, metavar="ALPHA",
                       help="the adapters' scale is ALPHA / RANK (default: RANK)")
    group.add_argument("--lora-also-train", nargs="+", metavar="NAME",
                       help="encoder weights that train too: bias, layer_norm, pooler")


def enable_lora_of(args, model):
    """Adds `--lora` adapters to `model` (before it compiles); says what trains."""
    from keras_bert_core.models.lora import enable_lora

    chosen = {"targets": args.lora_targets} if args.lora_targets else {}  # else the default
    try:
        summary = enable_lora(model, args.lora, alpha=args.lora_alpha,
                              also_train=args.lora_also_train or (), **chosen)
    except ValueError as e:
        raise UserError(f"--lora {args.lora}: {e}") from None
    say(str(summary))


def check_lora_options(args):
    """The `--lora*` options make sense together (before any data or model is loaded)."""
    from keras_bert_core.models.lora import ALSO_TRAIN, PROJECTIONS, TARGET_GROUPS

    given = [f"--{name.replace('_', '-')}" for name in
             ("lora_targets", "lora_alpha", "lora_also_train") if getattr(args, name)]
    if given and not args.lora:
        raise UserError(f"{' and '.join(given)} without --lora RANK: add --lora, e.g. --lora 8")
    for option, names, known in (("--lora-targets", args.lora_targets,
                                  [*PROJECTIONS, *TARGET_GROUPS]),
                                 ("--lora-also-train", args.lora_also_train, ALSO_TRAIN)):
        unknown = [name for name in names or () if name not in known]
        if unknown:
            raise UserError(f"{option} {' '.join(unknown)}: unknown; choose from "
                            f"{', '.join(known)}")


def finetune(run, task, model, train_dataset, epochs, steps_per_epoch, validation=None,
             class_weight=None, backup_every=50, verbose="auto"):
    """Fits `model` into `run`, continuing from its newest backup, if any; saves it and its
    curves, scores `validation`.

    Args:
        run: the `RunDirectory`.
        task: the `Task`.
        model: the compiled task model.
        train_dataset: one pass of `fit` batches, in the same order at every start (a seeded
            shuffle), so that a resumed run skips the batches it trained on.
        epochs: passes over `train_dataset`.
        steps_per_epoch: batches in one pass.
        validation: `(data, preprocessor, batch_size)` to score after each epoch and at
            the end, and to tune the model's answers on (`Task.tune`), or None.
        class_weight: optional dict of label id -> loss weight.
        backup_every: steps between backups.
        verbose: Keras' progress bar setting.

    Returns:
        `{"train": last epoch's metrics, "validation": task metrics}` (also metrics.json).
    """
    validation_dataset = None
    if validation is not None:
        validation_dataset = task.dataset(*validation)[0]
    run.fit(model, train_dataset, epochs, steps_per_epoch, backup_every=backup_every,
            validation_data=validation_dataset, class_weight=class_weight, verbose=verbose)
    if validation is not None:  # e.g. a multi-label model's thresholds, before it is saved
        task.tune(model, *validation)
    run.save_model(model)
    records = run.epoch_metrics()
    metrics = {"train": {k: v for k, v in records[-1].items()
                         if k not in ("event", "epoch", "step") and not k.startswith("val_")}
               if records else {}}
    if validation is not None:
        metrics["validation"] = task.evaluate(model, *validation)
    run.write_metrics(metrics)
    run.plot_curves(f"{task.name} fine-tuning: {run.path}")
    return metrics


def _checkpoint_seq_length(checkpoint):
    """The length a preset or fine-tuned run given as --checkpoint was trained with, else
    None."""
    if not checkpoint:
        return None
    from keras_bert_core.errors import CheckpointError
    from keras_bert_core.presets import trained_seq_length

    try:
        return trained_seq_length(checkpoint)
    except CheckpointError as e:
        raise UserError(str(e)) from None


def _load_data(args, task, learn_labels=True):
    """`(train, validation or None)` from files or TFDS; the task learns its labels from
    the training data, unless `learn_labels` is False."""
    if args.tfds:
        if args.train:
            raise UserError("pass either --train files or --tfds, not both")
        train = load_tfds(task, args.tfds, args.train_split, args.tfds_data_dir)
        if learn_labels:
            task.learn_labels(train)
        validation = None
        if args.validation_split:
            validation = load_tfds(task, args.tfds, args.validation_split, args.tfds_data_dir)
        return train, validation
    if not args.train:
        raise UserError("no training data: pass --train FILE or --tfds NAME")
    train = task.load(args.train)
    if learn_labels:
        task.learn_labels(train)
    return train, task.load(args.validation) if args.validation else None


def regression_setting(args):
    """The task setting `--regression` gives (classify and pair only)."""
    if not args.regression:
        return {}
    if args.task not in ("classify", "pair"):
        raise UserError(f"--regression is for --task classify or pair, not {args.task}")
    return {"regression": True}


def embedding_settings(args):
    """The task settings the embedding options give (`--task embed` only)."""
    settings = {name: getattr(args, name) for name in ("loss", "scale", "matryoshka_dims",
                                                        "length_buckets")
                if getattr(args, name) is not None}
    if "length_buckets" in settings:
        settings["length_buckets"] = length_buckets_option(settings["length_buckets"])
    if settings and args.task != "embed":
        given = ", ".join("--" + name.replace("_", "-") for name in settings)
        raise UserError(f"{given}: for --task embed, not {args.task}")
    return settings


def length_buckets_option(values):
    """`--length-buckets`' values as `BertEmbedder(length_buckets=...)` takes them."""
    if len(values) == 1 and values[0].lower() in ("auto", "none"):
        return None if values[0].lower() == "none" else "auto"
    if not all(value.isdigit() and int(value) > 0 for value in values):
        raise UserError(f"--length-buckets: 'auto', 'none' or positive lengths, not "
                        f"{' '.join(values)}")
    return sorted({int(value) for value in values})


def run(args):
    from keras_bert_core.config import BertConfig
    from keras_bert_core.models import BertEncoder

    saved = None
    if args.resume:
        args, saved = resumed_arguments(args)
    elif not args.task:
        raise UserError("no task given: pass --task (or --resume --run-dir RUN to continue a run)")
    else:
        check_model_options(args)
    check_lora_options(args)
    task_options = {} if args.resume else {**regression_setting(args),
                                            **embedding_settings(args)}
    if args.seq_length is None:
        args.seq_length = _checkpoint_seq_length(args.checkpoint) or DEFAULT_SEQ_LENGTH
    if not args.resume:
        task_options.update(long_text_settings(args))
    training = TrainingOptions.from_args(args)
    strategy = training_strategy(training, args.run_dir)
    path = args.run_dir or default_run_dir(f"finetune-{args.task}")
    inputs = [args.train, args.validation, args.vocab, args.checkpoint, args.config]
    # Locked before the slow part; a resumed run too.
    RunDirectory(path, strategy).claim(args.overwrite, inputs, resume=args.resume)
    # The tokenizer the vocabulary files are for (a resumed run: the run's own files).
    vocab_path = find_vocab(args.vocab, args.checkpoint)
    preprocessor = make_preprocessor(vocab_path, args.seq_length, args.cased)
    if args.vocab and args.checkpoint:
        check_same_kind(preprocessor, vocab_path, args.checkpoint)
    # A resumed run keeps the labels it learned: the model's outputs are numbered by them.
    task = task_for(args.task, saved["task"] if saved else {
        **data_settings(args), "seq_length": args.seq_length,
        "lower_case": preprocessor.lower_case, **task_options})
    preprocessor = task.preprocessor_for(preprocessor)  # e.g. a long text's windows
    train, validation = _load_data(args, task, learn_labels=not args.resume)
    if args.checkpoint and not saved and task.adopts_checkpoint_model:
        task.adopt(checkpoint_model(args.checkpoint))  # e.g. an embedding model's pooling
    train_dataset, rows = task.dataset(train, preprocessor, args.batch_size, training=True,
                                       seed=args.seed)
    steps_per_epoch = full_batches(rows, args.batch_size)
    with training_scope(training, strategy):
        if saved:  # the weights come from the run's backup
            encoder, source = BertEncoder(BertConfig.from_dict(saved["model_config"])), path
            check_fits(encoder.config, preprocessor, vocab_path, args.seq_length, source)
        else:
            encoder, source = build_encoder(ModelOptions.from_args(args), preprocessor,
                                            vocab_path, args.checkpoint)
        model = task.build_model(encoder, preprocessor)
        if args.lora:  # a resumed run too: its backup holds the adapters
            enable_lora_of(args, model)
        compile_for_training(model, training, args.epochs * steps_per_epoch,
                             **task.compile_arguments())
    say(f"fine-tuning {source} on {rows} {args.task} rows, {steps_per_epoch} steps an epoch")
    if task.tunes_on_validation and validation is None:
        say(f"no validation data: the {args.task} model answers with untuned settings "
            "(pass --validation to tune them)")
    if args.resume:
        run_dir = RunDirectory(path, strategy)
    else:
        run_dir = RunDirectory.create(path, args.overwrite, strategy, inputs)
        run_dir.write_config(args, encoder.config, task.settings)
        run_dir.write_tokenizer(preprocessor.tokenizer)
    metrics = finetune(run_dir, task, model, train_dataset, args.epochs, steps_per_epoch,
                       (validation, preprocessor, args.batch_size) if validation else None,
                       backup_every=args.backup_every)
    if "validation" in metrics:
        say(f"validation: {_summary(metrics['validation'])}")
    print(run_dir.path)


def _summary(metrics):
    return ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, float))
