"""`kbc vocab`: learn a WordPiece vocabulary from text files."""

import glob

from keras_bert_core.cli import UserError
from keras_bert_core.cli.common import say, stage
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.files import replaced_when_complete

# Faster than tf.text's defaults (a shallower threshold search, fewer passes) and still close
# to the requested size on corpora of a few megabytes; --min-count raises the floor.
_LEARN_PARAMS = {"upper_thresh": 500, "num_iterations": 2}


def add_arguments(parser):
    parser.add_argument("inputs", nargs="+", metavar="TEXT",
                        help="UTF-8 text files or globs")
    parser.add_argument("-o", "--output", default="vocab.txt", help="the vocab.txt to write")
    parser.add_argument("--vocab-size", type=int, default=8000,
                        help="most tokens, the special tokens included")
    parser.add_argument("--cased", action="store_true",
                        help="keep case and accents; default: uncased")
    parser.add_argument("--min-count", type=int, default=2,
                        help="least number of times a wordpiece must occur")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def learn_vocab(inputs, output, vocab_size, lower_case=True, min_count=2):
    """Learns a vocabulary from `inputs` and writes it to `output`; returns its tokens."""
    from keras_bert_core.text.vocab_learning import learn_wordpiece_vocab

    try:
        with stage(f"learning a {vocab_size}-token vocabulary from {len(inputs)} file(s)"):
            return learn_wordpiece_vocab(
                inputs, vocab_size, lower_case=lower_case, output_file=output,
                learn_params={**_LEARN_PARAMS, "lower_thresh": min_count})
    except ValueError as e:  # empty input files, a vocab_size below the alphabet
        raise UserError(str(e)) from None


def run(args):
    if args.vocab_size < 10:
        raise UserError(f"--vocab-size {args.vocab_size} is too small")
    claim_output(args.output, args.overwrite, make_parent=True,
                 inputs=[path for pattern in args.inputs for path in glob.glob(pattern)])
    with replaced_when_complete(args.output) as partial:
        vocab = learn_vocab(args.inputs, partial, args.vocab_size, not args.cased,
                            args.min_count)
    say(f"wrote {len(vocab)} tokens to {args.output}")
    print(args.output)
