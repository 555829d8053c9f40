"""`kbc pretrain` on TFRecord shards: the options they were written with (their
`.meta.json`) are taken when not given and refused when given otherwise, and the vocabulary
is checked against theirs."""

import os

from keras_bert_core.cli import UserError

TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords")


def is_tfrecords(inputs):
    return bool(inputs) and all(path.endswith(TFRECORD_SUFFIXES) for path in inputs)


def resolve_records_options(args):
    """Sets `--seq-length` and `--cased`/`--uncased` to what the shards were written with,
    and `--vocab` (without `--checkpoint`) to the vocabulary written beside them; refuses
    a given one that differs. Shards without metadata (written before it existed, or by
    another tool) tell only their length."""
    from keras_bert_core.pretraining.tfrecords import tfrecords_seq_length
    from keras_bert_core.pretraining.tfrecords_metadata import read_tfrecords_metadata
    from keras_bert_core.text.corpus_files import glob_files

    paths = glob_files(args.inputs)
    metadata = read_tfrecords_metadata(paths)
    source, values = metadata or (paths[0], {"seq_length": tfrecords_seq_length(paths)})
    length = values.get("seq_length")
    if args.seq_length is None:
        args.seq_length = length
    elif args.seq_length != length:
        raise UserError(f"--seq-length {args.seq_length}, but the records were written with "
                        f"rows of {length} tokens ({source}): leave out --seq-length")
    if metadata is None:
        return
    written_cased = not values.get("lower_case")
    if args.cased is None:
        args.cased = written_cased
    elif args.cased != written_cased:
        raise UserError(f"--{'cased' if args.cased else 'uncased'}, but the records were "
                        f"written {'cased' if written_cased else 'uncased'} ({source}): "
                        f"leave out --{'cased' if args.cased else 'uncased'}")
    if args.vocab is None and args.checkpoint is None:
        args.vocab = os.path.dirname(source) or "."


def check_records_vocabulary(inputs, preprocessor, vocab_path):
    """The vocabulary must be the one the shards were written with (a `CheckpointError`,
    one line, when it is not)."""
    from keras_bert_core.pretraining.tfrecords_metadata import check_records_vocabulary
    from keras_bert_core.text.corpus_files import glob_files

    check_records_vocabulary(glob_files(inputs), preprocessor.tokenizer, vocab_path)
