"""`kbc pretrain`: masked-LM + next-sentence, masked-LM + sentence-order (ALBERT),
masked-LM only, or ELECTRA's replaced-token detection (`--objective electra`) pretraining
from raw text or TFRecords; masked-LM only on packed rows of short documents (`--pack`); or
writing a text corpus's rows as TFRecords (`--write-tfrecords`)."""

import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.model_building import (
    build_encoder,
    check_fits,
    check_model_options,
    check_same_kind,
    find_vocab,
    make_preprocessor,
    model_path,
    model_source,
    new_config,
    under_global_dtype_policy,
    vocabulary_size,
)
from keras_bert_core.cli.options import (
    ModelOptions,
    TrainingOptions,
    add_model_options,
    add_run_options,
    add_training_options,
    add_vocab_options,
    positive_int,
    rate,
)
from keras_bert_core.cli.pretrain_objective import (
    add_objective_arguments,
    check_objective,
    make_pretrainer,
    summary,
)
from keras_bert_core.cli.pretrain_records import (
    check_records_vocabulary,
    is_tfrecords,
    resolve_records_options,
)
from keras_bert_core.cli.resume import resumed_arguments
from keras_bert_core.cli.run_dir import (
    RunDirectory,
    claim_output,
    default_run_dir,
)
from keras_bert_core.cli.training_setup import (
    compile_for_training,
    training_scope,
    training_strategy,
)

PAIR_TASKS = ("next_sentence", "sentence_order", "none")
DEFAULT_SEQ_LENGTH = 128


def add_arguments(parser):
    parser.add_argument(
        "inputs", nargs="*", metavar="FILE",
        help="text files or globs (one sentence a line, a blank line between documents), "
             "or .tfrecord shards written by write_pretraining_tfrecords")
    add_vocab_options(parser, seq_length=None,
                      seq_length_help=f"(default: {DEFAULT_SEQ_LENGTH}; with TFRecords, "
                                      "the length they were written with)",
                      vocab_note="; learn one with `kbc vocab --kind`. Rows are packed "
                                 "as its family packs them. Default: the one in "
                                 "--checkpoint's folder, else the one written beside "
                                 "the TFRecords")
    parser.add_argument("--mask-rate", type=rate, default=0.15,
                        help="fraction of the tokens masked-LM predicts (default: 0.15, "
                             "BERT's; ModernBERT pretrained with 0.3)")
    parser.add_argument("--max-predictions", type=positive_int,
                        help="masked-LM predictions per sequence (default: --mask-rate of "
                             "--seq-length)")
    parser.add_argument("--whole-word-masking", action="store_true",
                        help="mask every piece of a word together")
    parser.add_argument("--max-ngram", type=positive_int, default=1, metavar="N",
                        help="mask n-grams of up to N words (pieces without "
                             "--whole-word-masking), n drawn with p(n) ~ 1/n; ALBERT uses 3 "
                             "with --whole-word-masking (default: 1, single words)")
    parser.add_argument("--pair-task", choices=PAIR_TASKS,
                        help="the task on sentence pairs: next_sentence (BERT; B follows A "
                             "or is random), sentence_order (ALBERT; B follows A, half the "
                             "pairs swapped), or none: masked LM only (RoBERTa; the only "
                             "choice for DistilBERT, which has no pooler for a pair head). "
                             "Default: a new model's family's own (next_sentence for BERT, "
                             "sentence_order for ALBERT, none for RoBERTa and DistilBERT); "
                             "next_sentence with --checkpoint")
    parser.add_argument("--no-next-sentence", dest="next_sentence", action="store_false",
                        help="the same as --pair-task none: masked LM only, as RoBERTa: no "
                             "pair head, and each row of text input is one run of "
                             "consecutive sentences")
    parser.add_argument("--pack", action="store_true",
                        help="fill each row with several short documents (chunks of a long "
                             "one) instead of padding one: masked LM only, so the pair task "
                             "defaults to none (refused with a pair task); text input only")
    tfrecords = parser.add_argument_group(
        "writing TFRecords (then `kbc pretrain DIR/*.tfrecord --vocab DIR` trains on them)")
    tfrecords.add_argument("--write-tfrecords", metavar="DIR",
                           help="write the text corpus's unmasked rows (pairs for the pair "
                                "task) as TFRecord shards into DIR, with the vocabulary, and "
                                "exit without training (masks are drawn when they are read); "
                                "an existing DIR only with --overwrite")
    tfrecords.add_argument("--shards", type=positive_int, default=1, metavar="N",
                           help="--write-tfrecords: files to spread the rows over")
    tfrecords.add_argument("--dupe-factor", type=positive_int, default=1, metavar="N",
                           help="--write-tfrecords: passes over the corpus, each cutting "
                                "other pairs")
    add_objective_arguments(parser)
    add_model_options(parser)
    parser.add_argument("--checkpoint", metavar="PATH",
                        help="continue pretraining these weights (any supported format, "
                             "a kbc run, or a Hub name hf://org/name[@revision]) instead of "
                             "starting from --preset/--config")
    add_training_options(parser, batch_size=32, learning_rate=1e-4)
    parser.add_argument("--epochs", type=positive_int, default=10,
                        help="epochs; each epoch end is a backup, a checkpoint and a log line")
    parser.add_argument("--steps-per-epoch", type=positive_int, default=1000)
    parser.add_argument("--checkpoint-every", type=positive_int, default=1, metavar="EPOCHS",
                        help="keep a weights checkpoint every this many epochs")
    add_run_options(parser)


# The pair task each family pretrains with: the default for a new model of that family.
FAMILY_PAIR_TASKS = {"bert": "next_sentence", "albert": "sentence_order", "roberta": "none",
                     "distilbert": "none", "modernbert": "none", "deberta": "none",
                     "xlm-roberta": "none", "electra": "none"}


def resolve_pair_task(args, family=None):
    """Sets `args.pair_task` ("next_sentence", "sentence_order" or "none") from
    `--pair-task` and `--no-next-sentence`, and `args.next_sentence` to whether there is a
    pair head; refuses the two options when they disagree. Neither given: the task of the
    new model's `family` (`FAMILY_PAIR_TASKS`), else next_sentence (a checkpoint, and runs
    saved before --pair-task existed)."""
    if args.pair_task is None:
        args.pair_task = (FAMILY_PAIR_TASKS.get(family, "next_sentence") if args.next_sentence
                          else "none")
    elif not args.next_sentence and args.pair_task != "none":
        raise UserError(f"--no-next-sentence (masked LM only) contradicts --pair-task "
                        f"{args.pair_task}; give one of them")
    args.next_sentence = args.pair_task != "none"
    return args


def check_packing(args):
    """`--pack` trains the masked LM alone on rows of text files; a pair task (given, or
    a resumed run's) and TFRecord input are refused. Without `--pair-task`, `--pack` sets
    it to none."""
    if not args.pack:
        return
    if is_tfrecords(args.inputs):
        raise UserError("--pack packs the documents of text files, and these inputs are "
                        "TFRecords, whose rows are made already; leave out --pack")
    if args.pair_task is None and args.next_sentence:
        args.pair_task = "none"
    elif args.pair_task not in (None, "none"):
        raise UserError(f"--pack puts several documents in a row, which leaves no sentence "
                        f"pairs for --pair-task {args.pair_task}; pack with --pair-task none "
                        "(masked LM only), or leave out --pack")


def check_pair_task(config, pair_task, source):
    """A pair task needs the pooler its head reads; DistilBERT has none."""
    if pair_task != "none" and not config.pooler:
        raise UserError(f"--pair-task {pair_task} needs a pooler for its head, and {source} "
                        f"({config.family}) has none: pretrain it with --pair-task none "
                        "(masked LM only)")


def pretraining_data(inputs, tokenizer, seq_length, batch_size, max_predictions,
                     whole_word_masking=False, seed=None, pair_task="next_sentence",
                     max_ngram=1, mask_rate=0.15):
    """Endless `(x, y, sample_weight)` batches from text files or TFRecord shards;
    `pair_task` is "next_sentence", "sentence_order" or "none"."""
    from keras_bert_core.pretraining.data import pretraining_dataset
    from keras_bert_core.pretraining.tfrecords import (
        read_pretraining_tfrecords,
        tfrecords_pair_task,
    )

    task = None if pair_task == "none" else pair_task
    try:
        if is_tfrecords(inputs):
            recorded = tfrecords_pair_task(inputs)
            if task and recorded is None:
                raise UserError(f"{inputs[0]}: these TFRecords hold no next-sentence labels "
                                "(written with next_sentence=False); pretrain on them with "
                                "--no-next-sentence")
            if task and recorded not in (task, "unknown"):
                raise UserError(f"{inputs[0]}: these TFRecords hold {recorded} labels, not "
                                f"{task}; pretrain on them with --pair-task {recorded}")
            dataset = read_pretraining_tfrecords(
                inputs, tokenizer, batch_size=batch_size, max_predictions_per_seq=max_predictions,
                seed=seed, whole_word_masking=whole_word_masking, max_ngram=max_ngram,
                mask_rate=mask_rate)
        else:
            dataset = pretraining_dataset(
                inputs, tokenizer, seq_length=seq_length, max_predictions_per_seq=max_predictions,
                batch_size=batch_size, seed=seed, whole_word_masking=whole_word_masking,
                pair_task=task, max_ngram=max_ngram, mask_rate=mask_rate)
    except ValueError as e:  # an empty file, a bad sequence length
        raise UserError(str(e)) from None
    hint = (" (next-sentence rows need documents of two or more sentences, one a line)"
            if task == "next_sentence" else "")
    check_not_empty(dataset, inputs, batch_size, seq_length, hint)
    return dataset.repeat()


def packed_pretraining_data(inputs, tokenizer, seq_length, batch_size, max_predictions,
                            whole_word_masking=False, seed=None, max_ngram=1, mask_rate=0.15):
    """Endless masked-LM batches of packed rows (`--pack`,
    `pretraining.packing.packed_corpus_dataset`)."""
    from keras_bert_core.pretraining.masking import MaskedLMMasker
    from keras_bert_core.pretraining.packing import packed_corpus_dataset

    masker = MaskedLMMasker(tokenizer, max_predictions_per_seq=max_predictions,
                            whole_word_masking=whole_word_masking, max_ngram=max_ngram,
                            mask_rate=mask_rate)
    try:
        dataset = packed_corpus_dataset(inputs, tokenizer, seq_length, batch_size, masker,
                                        seed=seed)
    except ValueError as e:  # an empty file, a bad sequence length
        raise UserError(str(e)) from None
    check_not_empty(dataset, inputs, batch_size, seq_length)
    return dataset.repeat()


def check_not_empty(dataset, inputs, batch_size, seq_length, hint=""):
    """An empty stream would make `fit` end at once with a NaN loss, as if it had trained."""
    if not any(True for _ in dataset.take(1)):
        raise UserError(f"{', '.join(inputs)}: not enough text for one batch of {batch_size} "
                        f"rows of {seq_length} tokens{hint}; give more text or a smaller "
                        "--batch-size")


def check_tfrecords_output(args, inputs):
    """`--write-tfrecords DIR` reads text and trains nothing; DIR must be new (or
    `--overwrite`)."""
    if args.resume:
        raise UserError("--write-tfrecords writes TFRecords and trains nothing; it cannot "
                        "--resume a run")
    if is_tfrecords(args.inputs):
        raise UserError("--write-tfrecords writes TFRecords from text files, and these "
                        "inputs are TFRecords already")
    if args.pack:
        raise UserError("--write-tfrecords writes unpacked rows (masks are drawn when they "
                        "are read); leave out --pack")
    claim_output(args.write_tfrecords, args.overwrite, inputs=inputs,
                 kind=("a folder of pretraining TFRecords", ("pretraining*",)))


def write_tfrecords(args, tokenizer):
    """`--write-tfrecords DIR`: the corpus's rows for `args.pair_task` as TFRecord shards,
    and the vocabulary beside them; DIR appears only when complete."""
    import tensorflow as tf

    from keras_bert_core.files import replaced_when_complete
    from keras_bert_core.pretraining.tfrecords import write_pretraining_tfrecords
    from keras_bert_core.text.vocabulary.files import write_vocabulary_files

    output = args.write_tfrecords
    pair_task = None if args.pair_task == "none" else args.pair_task
    with replaced_when_complete(output) as partial:
        os.makedirs(partial)
        try:
            shards = write_pretraining_tfrecords(
                args.inputs, tokenizer, os.path.join(partial, "pretraining"),
                seq_length=args.seq_length, num_shards=args.shards,
                dupe_factor=args.dupe_factor, seed=args.seed, pair_task=pair_task)
        except ValueError as e:  # an empty file, a bad sequence length
            raise UserError(str(e)) from None
        rows = sum(1 for _ in tf.data.TFRecordDataset(shards))
        if not rows:
            raise UserError(f"{', '.join(args.inputs)}: not enough text for one row of "
                            f"{args.seq_length} tokens; give more text")
        write_vocabulary_files(tokenizer, partial)
    say(f"wrote {rows} rows ({args.pair_task} pairs task) in {args.shards} shard(s) of "
        f"{args.seq_length} tokens to {output}")
    print(output)


def train(run, model, dataset, epochs, steps_per_epoch, checkpoint_every=1, backup_every=50,
          verbose="auto"):
    """Fits `model` on the endless `dataset` into `run`, continuing from its newest backup
    (past the batches trained on); saves the model and its curves.

    Returns the metrics of the last epoch.
    """
    run.fit(model, dataset, epochs, steps_per_epoch, backup_every=backup_every,
            checkpoint_every_epochs=checkpoint_every, verbose=verbose)
    run.save_model(model)
    records = run.epoch_metrics()
    metrics = {k: v for k, v in records[-1].items() if k != "event"} if records else {}
    run.write_metrics(metrics)
    run.plot_curves(f"pretraining: {run.path}")
    return metrics


def run(args):
    from keras_bert_core.checkpoints import load_pretrainer
    from keras_bert_core.config import BertConfig
    from keras_bert_core.models import BertEncoder

    if args.resume:
        # Runs saved before --no-next-sentence existed had the next-sentence head.
        args, saved = resumed_arguments(args, older_defaults={"next_sentence": True})
    elif not args.inputs:
        raise UserError("no corpus given: pass text files or .tfrecord shards")
    else:
        check_model_options(args)
        if not args.write_tfrecords and (args.shards, args.dupe_factor) != (1, 1):
            raise UserError("--shards and --dupe-factor shape the files --write-tfrecords "
                            "writes; without it they would change nothing")
    check_packing(args)
    check_objective(args)
    if is_tfrecords(args.inputs):
        resolve_records_options(args)
    elif args.seq_length is None:
        args.seq_length = DEFAULT_SEQ_LENGTH
    if args.pair_task is not None or args.resume:  # a new model's default waits for its family
        resolve_pair_task(args)
    inputs = [*args.inputs, args.vocab, args.checkpoint, args.config]
    if args.write_tfrecords:
        check_tfrecords_output(args, inputs)
    else:
        training = TrainingOptions.from_args(args)
        strategy = training_strategy(training, args.run_dir)
        run_dir = RunDirectory(args.run_dir or default_run_dir("pretrain"), strategy)
        # Locked before the slow part; a resumed run too.
        run_dir.claim(args.overwrite, inputs, resume=args.resume)
    vocab_path = find_vocab(args.vocab, args.checkpoint)
    preprocessor = make_preprocessor(vocab_path, args.seq_length, args.cased)
    if args.vocab and args.checkpoint:
        check_same_kind(preprocessor, vocab_path, args.checkpoint)
    if is_tfrecords(args.inputs):
        check_records_vocabulary(args.inputs, preprocessor, vocab_path)
    options = ModelOptions.from_args(args)
    if not args.resume and not args.checkpoint:  # fail before reading the corpus
        config = new_config(options, vocabulary_size(preprocessor))
        resolve_pair_task(args, config.family)
        check_pair_task(config, args.pair_task, model_source(options))
    resolve_pair_task(args)
    if args.write_tfrecords:
        return write_tfrecords(args, preprocessor.tokenizer)
    max_predictions = args.max_predictions or max(1, round(args.mask_rate * args.seq_length))
    if args.pack:
        dataset = packed_pretraining_data(
            args.inputs, preprocessor.tokenizer, args.seq_length, args.batch_size,
            max_predictions, args.whole_word_masking, args.seed, args.max_ngram, args.mask_rate)
    else:
        dataset = pretraining_data(args.inputs, preprocessor.tokenizer, args.seq_length,
                                   args.batch_size, max_predictions, args.whole_word_masking,
                                   args.seed, args.pair_task, args.max_ngram, args.mask_rate)
    with training_scope(training, strategy):
        loaded = None
        if args.resume:
            encoder = BertEncoder(BertConfig.from_dict(saved["model_config"]))
            source = run_dir.path
            check_fits(encoder.config, preprocessor, vocab_path, args.seq_length, source)
        elif args.checkpoint:
            source = model_path(args.checkpoint)
            loaded, config = load_pretrainer(source)
            check_fits(config, preprocessor, vocab_path, args.seq_length, source)
            encoder = under_global_dtype_policy(loaded.encoder)
        else:
            encoder, source = build_encoder(options, preprocessor, vocab_path)
        check_pair_task(encoder.config, args.pair_task, source)
        pretrainer = make_pretrainer(args, encoder, loaded, source)
        compile_for_training(pretrainer, training, args.epochs * args.steps_per_epoch)
    if not args.resume:
        run_dir = RunDirectory.create(run_dir.path, args.overwrite, strategy, inputs)
        run_dir.write_config(args, pretrainer.encoder.config)
        run_dir.write_tokenizer(preprocessor.tokenizer)
    metrics = train(run_dir, pretrainer, dataset, args.epochs, args.steps_per_epoch,
                    args.checkpoint_every, args.backup_every)
    if run_dir.chief:  # which logs the metrics
        say(f"pretrained {run_dir.path}: {summary(metrics)}")
    print(run_dir.path)
