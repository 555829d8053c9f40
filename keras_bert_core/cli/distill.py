"""`kbc distill`: distill a fine-tuned model (a `kbc finetune` run) into a smaller student.

The student trains on the teacher's soft targets and the labels (`kbc.Distiller`), and on
the teacher's soft targets alone for `--unlabeled` texts. An embedding model's student
learns the teacher's vectors of `--unlabeled` texts alone (`kbc.EmbeddingDistiller`), and is
compared on retrieval metrics (a pairs `--validation` file, or `--queries`, `--corpus`,
`--relevance`). The run directory is a fine-tuning
run of the student (so `kbc evaluate`, `predict` and `export` take it) with, in
comparison.json, the teacher against the student: the task's metrics, parameters, the
`.keras` file sizes and Keras's time per text, and (unless `--no-export-latency`) each
model exported to a SavedModel and a `.tflite` file: their sizes and time per text.
"""

import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.comparison import compare, comparison_table
from keras_bert_core.cli.finetuned import load_finetuned
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.model_building import MODEL_FILE, model_path, run_directory_of
from keras_bert_core.cli.options import (
    TrainingOptions,
    add_run_options,
    add_training_options,
    positive_int,
)
from keras_bert_core.cli.resume import resumed_arguments
from keras_bert_core.cli.run_dir import RunDirectory, default_run_dir
from keras_bert_core.cli.tasks import (
    add_data_options,
    check_input_text,
    data_settings,
    read_input,
)
from keras_bert_core.cli.training_setup import (
    compile_for_training,
    full_batches,
    training_scope,
    training_strategy,
)
from keras_bert_core.config import PRESETS, BertConfig

# `--student` value: the teacher's every other layer, weights copied (DistilBERT's start).
FROM_TEACHER = "every-other-layer"
COMPARISON_FILE = "comparison.json"
# Tasks whose unlabeled data the teacher can label (SQuAD needs answer spans to make rows).
UNLABELED_TASKS = ("classify", "pair", "ner", "choice")
# The `Distiller` settings the options give (unset: its defaults).
DISTILLER_OPTIONS = ("temperature", "alpha", "hidden_weight", "hidden_loss", "attention_weight")
RETRIEVAL_OPTIONS = ("queries", "corpus", "relevance")


def add_arguments(parser):
    parser.add_argument("--teacher", metavar="RUN",
                        help="the fine-tuned model to distill: a kbc finetune run (or its "
                             "model.keras); required unless --resume")
    parser.add_argument("--student", default=FROM_TEACHER, metavar="PRESET|PATH",
                        help=f"the student: '{FROM_TEACHER}' (the teacher's every other "
                             "layer, weights copied, as DistilBERT starts), a preset "
                             f"({', '.join(sorted(PRESETS))}), a BertConfig JSON (new "
                             "weights), or pretrained weights: a kbc run, a .keras file or a "
                             "checkpoint folder, with the teacher's vocabulary")
    data = parser.add_argument_group("data (in the teacher's task format)")
    data.add_argument("--train", metavar="FILE",
                      help="labeled training data; required unless --resume, or the teacher "
                           "is an embedding model (it learns from --unlabeled texts alone)")
    data.add_argument("--validation", metavar="FILE",
                      help="labeled data to compare teacher and student on (default: --train)")
    data.add_argument("--unlabeled", metavar="FILE",
                      help="more texts, labeled by the teacher (its soft targets only): a "
                           "data file without labels, or text lines (.txt); classify, pair, "
                           "ner and choice tasks; an embedding model's texts to learn the "
                           "teacher's vectors of (text lines or a pairs file)")
    for name, what in (("queries", "the queries: _id (or id), text"),
                       ("corpus", "the documents: _id (or id), [title,] text"),
                       ("relevance", "query-id, corpus-id, optional score")):
        data.add_argument(f"--{name}", metavar="FILE",
                          help=f"an embedding model's retrieval set to compare on: {what}")
    add_data_options(parser, with_defaults=False)
    # Unset: the Distiller's defaults (an embedding model's student takes none of them).
    loss = parser.add_argument_group("distillation (not for embedding models)")
    loss.add_argument("--temperature", type=float,
                      help="softmax temperature of the soft targets (default 2)")
    loss.add_argument("--alpha", type=float,
                      help="weight of the labels' loss; the soft targets weigh 1 - alpha "
                           "(default 0.5)")
    loss.add_argument("--hidden-weight", type=float,
                      help="weight of the last layers' hidden-state loss (default 0: off)")
    loss.add_argument("--hidden-loss", choices=("mse", "cosine"),
                      help="the hidden-state distance (default mse)")
    loss.add_argument("--attention-weight", type=float,
                      help="weight of the last layers' attention transfer (MiniLM; default "
                           "0: off)")
    add_training_options(parser, batch_size=32, learning_rate=5e-5)
    parser.add_argument("--epochs", type=positive_int, default=3,
                        help="passes over the training data (and --unlabeled)")
    parser.add_argument("--no-export-latency", dest="export_latency", action="store_false",
                        help="skip exporting teacher and student to a SavedModel and a "
                             ".tflite file to compare their sizes and time per text")
    add_run_options(parser)


def _load_teacher(path):
    try:
        return load_finetuned(path)
    except UserError as e:
        raise UserError(f"--teacher: {e}") from None


def _student_vocabulary(path):
    """`(tokens, where)` of the vocabulary that comes with pretrained student weights (in
    their folder: WordPiece, BPE or SentencePiece files), or None."""
    from keras_bert_core.text import BertPreprocessor
    from keras_bert_core.text.vocabulary.files import find_vocabulary

    folder = run_directory_of(path) or (path if os.path.isdir(path) else os.path.dirname(path))
    try:
        source = find_vocabulary(folder or ".")
    except ValueError:  # no vocabulary there: the weights' vocab_size is checked instead
        return None
    return BertPreprocessor(folder or ".", seq_length=8).vocabulary, source.file


def _check_student_vocabulary(choice, teacher_vocabulary, teacher_run):
    """Pretrained student weights must come with the teacher's vocabulary (when they come
    with one at all: else their vocab_size is checked once loaded)."""
    from keras_bert_core.models import check_vocabularies

    if choice == FROM_TEACHER or choice in PRESETS or not os.path.exists(choice) \
            or choice.endswith(".json"):
        return
    found = _student_vocabulary(choice)
    if found is not None:
        try:
            check_vocabularies(teacher_vocabulary, found[0])
        except ValueError as e:
            raise UserError(f"{e} (the teacher's in {teacher_run}, the student's "
                            f"{found[1]})") from None


def _student(args, task, teacher):
    """The student task model (built in the training scope), and where it came from."""
    from keras_bert_core.checkpoints import load_checkpoint
    from keras_bert_core.cli.model_building import under_global_dtype_policy
    from keras_bert_core.models import BertEncoder, make_distilbert_student

    teacher_config = teacher.encoder.config
    seq_length = task.settings["seq_length"]
    choice = args.student
    if choice == FROM_TEACHER:
        return make_distilbert_student(teacher), f"every other layer of {args.teacher}"
    if choice in PRESETS or (choice.endswith(".json") and os.path.isfile(choice)):
        try:
            config = (BertConfig.preset(choice, vocab_size=teacher_config.vocab_size)
                      if choice in PRESETS else BertConfig.from_json(choice))
        except ValueError as e:
            raise UserError(f"--student {choice}: {e}") from None
        if choice not in PRESETS:
            config = BertConfig.from_dict({**config.to_dict(),
                                           "vocab_size": teacher_config.vocab_size})
        _check_length(config, seq_length, choice)
        return (task.build_student(BertEncoder(config), teacher.preprocessor, teacher),
                f"--student {choice} (new weights)")
    if not os.path.exists(choice):
        raise UserError(f"--student {choice} is not '{FROM_TEACHER}', a preset "
                        f"({', '.join(sorted(PRESETS))}), a BertConfig JSON or a checkpoint")
    encoder, config = load_checkpoint(model_path(choice))
    if config.vocab_size != teacher_config.vocab_size:
        raise UserError(f"teacher and student vocabularies differ: the teacher has vocab_size "
                        f"{teacher_config.vocab_size}, --student {choice} "
                        f"{config.vocab_size}; a student must use the teacher's vocabulary")
    _check_length(config, seq_length, choice)
    # The student reads text as the teacher does (its preprocessor, where it carries one).
    return (task.build_student(under_global_dtype_policy(encoder), teacher.preprocessor,
                               teacher),
            f"--student {choice}")


def _check_length(config, seq_length, student):
    if seq_length > config.max_sequence_length:
        raise UserError(f"the teacher's seq_length {seq_length} exceeds --student {student}'s "
                        f"longest sequence, {config.max_sequence_length} positions")


def _unlabeled_batches(task, path, preprocessor, batch_size, seed, labeled_spec):
    """`(batches, rows)` of the teacher-labeled texts: `(x, placeholder targets, weight 0)`,
    so that only the soft targets train on them."""
    import numpy as np

    from keras_bert_core.models.metrics import IGNORE_LABEL
    from keras_bert_core.training.soft_target_batches import (
        with_placeholder_targets,
        with_weights,
    )

    if task.name not in UNLABELED_TASKS:
        raise UserError(f"--unlabeled takes {', '.join(UNLABELED_TASKS)} data, not "
                        f"{task.name} (its rows are built from the answers)")
    data = read_input(task, path)
    if task.name == "ner":
        from keras_bert_core.tasks.token_classification import tagging_features

        features = tagging_features(data, preprocessor.tokenizer, task.settings["seq_length"])
        # The tokens the soft targets cover: each word's first piece, as labels mark them.
        features.labels = np.where(features.word_ids >= 0, 0, IGNORE_LABEL).astype(np.int32)
        dataset, rows = features.dataset(batch_size, True, seed=seed), len(features)
        return with_weights(dataset, batch_size, 0.0), rows
    dataset, rows = task.dataset(data, preprocessor, batch_size, training=True, seed=seed)
    return with_placeholder_targets(dataset, labeled_spec, batch_size), rows


def _training_data(args, task, train, preprocessor):
    """`(batches, steps per epoch, rows)`: the labeled batches (weight 1) and, with
    `--unlabeled`, the teacher-labeled ones (weight 0), drawn in a seeded random order;
    for a task that distills without labels, the `--unlabeled` batches alone."""
    from keras_bert_core.training.soft_target_batches import mixed_batches, with_weights

    if not task.distills_with_labels:
        dataset, rows = task.unlabeled_dataset(read_input(task, args.unlabeled), preprocessor,
                                               args.batch_size, seed=args.seed)
        return dataset, full_batches(rows, args.batch_size, "--unlabeled"), rows
    labeled, rows = task.dataset(train, preprocessor, args.batch_size, training=True,
                                 seed=args.seed)
    steps = full_batches(rows, args.batch_size)
    labeled_spec = labeled.element_spec[1]
    labeled = with_weights(labeled, args.batch_size, 1.0)
    if not args.unlabeled:
        return labeled, steps, rows
    unlabeled, unlabeled_rows = _unlabeled_batches(
        task, args.unlabeled, preprocessor, args.batch_size, args.seed, labeled_spec)
    unlabeled_steps = full_batches(unlabeled_rows, args.batch_size, "--unlabeled")
    return (mixed_batches(labeled, unlabeled, steps, unlabeled_steps, seed=args.seed),
            steps + unlabeled_steps, rows + unlabeled_rows)


def _check_task_options(args, task):
    """The data options the teacher's task takes (its kind is known once it is loaded)."""
    if task.distills_with_labels:
        if not args.train:
            raise UserError("the following arguments are required: --train (or --resume "
                            "--run-dir RUN to continue a run)")
        given = [f"--{name}" for name in RETRIEVAL_OPTIONS if getattr(args, name)]
        if given:
            raise UserError(f"{', '.join(given)}: a retrieval set compares embedding models; "
                            f"the teacher is a {task.name} model (compare on --validation)")
        return
    if args.train:
        raise UserError(f"--train: a {task.name} model's student learns the teacher's vectors "
                        "of --unlabeled texts, without labels; pass the texts as --unlabeled")
    if not args.unlabeled:
        raise UserError(f"--unlabeled is required: a {task.name} model's student learns the "
                        "teacher's vectors of these texts")


def _timing_data(args, task, scored):
    """The examples timed: the scored ones, or the texts learned from where there are none
    or they are a retrieval set (not the task's examples)."""
    if scored is None or args.queries:
        return read_input(task, args.unlabeled)
    return scored


def distill(run, task, distiller, dataset, epochs, steps_per_epoch, validation=None,
            backup_every=50, class_weight=None):
    """Fits `distiller` into `run` (a `RunDirectory`), saves its student as the run's
    model, its metrics and curves; as `finetune.finetune` does for a task model.

    Args:
        validation: `(data, preprocessor, batch_size)` to score the student on at the end,
            or None.
        class_weight: optional dict of label id -> weight of the hard loss.

    Returns:
        `{"train": last epoch's metrics, "validation": task metrics}` (also metrics.json).
    """
    run.fit(distiller, dataset, epochs, steps_per_epoch, backup_every=backup_every,
            class_weight=class_weight)
    run.save_model(distiller.student)
    records = run.epoch_metrics()
    metrics = {"train": {k: v for k, v in records[-1].items()
                         if k not in ("event", "epoch", "step")} if records else {}}
    if validation is not None:
        metrics["validation"] = task.evaluate(distiller.student, *validation)
    run.write_metrics(metrics)
    run.plot_curves(f"{task.name} distillation: {run.path}")
    return metrics


def run(args):
    from keras_bert_core.checkpoints.keras_file import load_model

    if args.resume:  # the arguments the run started with (its paths absolute)
        args, _ = resumed_arguments(args)
    missing = [option for option in ("teacher", "train") if not getattr(args, option)
               and not (option == "train" and args.unlabeled)]  # an embedder's may do
    if missing:
        raise UserError(f"the following arguments are required: "
                        f"{', '.join('--' + option for option in missing)} (or --resume "
                        "--run-dir RUN to continue a run)")
    if args.student not in (FROM_TEACHER, *PRESETS) and os.path.exists(args.student):
        args.student = os.path.abspath(args.student)  # config.json's, for --resume elsewhere
    training = TrainingOptions.from_args(args)
    strategy = training_strategy(training, args.run_dir)
    path = args.run_dir or default_run_dir("distill")
    retrieval = [getattr(args, name) for name in RETRIEVAL_OPTIONS]
    if any(retrieval) and not all(retrieval):
        raise UserError("--queries, --corpus and --relevance go together: pass all three")
    inputs = [args.teacher, args.train, args.validation, args.unlabeled, *retrieval]
    if args.unlabeled:  # TensorFlow would fail deep inside on an empty or non-UTF-8 file
        check_input_text(args.unlabeled, command="--unlabeled",
                         purpose="--unlabeled has no texts for the teacher to label")
    # Locked before the slow part; a resumed run too.
    RunDirectory(path, strategy).claim(args.overwrite, inputs, resume=args.resume)
    teacher, task, preprocessor = _load_teacher(args.teacher)
    teacher_folder = run_directory_of(args.teacher) or args.teacher  # or a lone .keras
    _check_student_vocabulary(args.student, preprocessor.vocabulary, teacher_folder)
    _check_task_options(args, task)
    task.settings.update(data_settings(args))
    train = task.load(args.train) if task.distills_with_labels else None
    validation = task.load(args.validation) if args.validation else None
    if all(retrieval):
        from keras_bert_core.tasks.embedding import load_retrieval

        validation = load_retrieval(*retrieval)
    dataset, steps_per_epoch, rows = _training_data(args, task, train, preprocessor)
    compared_teacher = teacher  # this host's, outside the strategy
    with training_scope(training, strategy):
        if strategy.num_replicas_in_sync > 1:  # the teacher's variables, on every replica
            teacher = load_model(model_path(args.teacher))
        student, source = _student(args, task, teacher)
        try:
            distiller = task.distiller(teacher, student, {
                name: getattr(args, name) for name in DISTILLER_OPTIONS
                if getattr(args, name) is not None})
        except (TypeError, ValueError) as e:
            raise UserError(str(e)) from None
        compile_for_training(distiller, training, args.epochs * steps_per_epoch)
    say(f"distilling {args.teacher} into {source} on {rows} {task.name} "
        f"{'rows' if task.distills_with_labels else 'texts'}, "
        f"{steps_per_epoch} steps an epoch")
    if args.resume:  # the weights come from the run's backup
        run_dir = RunDirectory(path, strategy)
    else:
        run_dir = RunDirectory.create(path, args.overwrite, strategy, inputs)
        run_dir.write_config(args, student.encoder.config, task.settings)
        run_dir.write_tokenizer(preprocessor.tokenizer)  # the teacher's files, of any kind
    distill(run_dir, task, distiller, dataset, args.epochs, steps_per_epoch,
            None if validation is None else (validation, preprocessor, args.batch_size),
            args.backup_every)
    if not run_dir.chief:
        return
    # The chief compares alone, with models outside the strategy: the other workers have
    # finished, and a multi-worker model's evaluate would wait for them.
    if strategy.num_replicas_in_sync > 1:
        student = load_model(run_dir.file(MODEL_FILE))
    scored = validation if validation is not None else train  # None: speed alone
    described = (args.validation or (retrieval[0] and ", ".join(retrieval)) or args.train
                 or f"{args.unlabeled} (speed only: no --validation)")
    comparison = {
        "teacher_run": os.path.abspath(teacher_folder),
        "data": os.path.abspath(args.validation or args.queries or args.train
                                or args.unlabeled),
        **compare(task, {"teacher": (compared_teacher, model_path(args.teacher)),
                         "student": (student, run_dir.file(MODEL_FILE))},
                  scored, preprocessor, args.batch_size, exports=args.export_latency,
                  timing_data=_timing_data(args, task, scored)),
    }
    run_dir.write_json(COMPARISON_FILE, comparison)
    print(f"on {described}:")
    print("\n".join(comparison_table(comparison)))
    print(run_dir.path)
