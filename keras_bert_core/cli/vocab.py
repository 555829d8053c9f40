"""`kbc vocab`: learn a vocabulary from text files: WordPiece (BERT, DistilBERT), byte-level
BPE (RoBERTa) or SentencePiece (ALBERT)."""

import glob

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say, stage
from keras_bert_core.cli.options import positive_int
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.files import replaced_when_complete

# Faster than tf.text's defaults (a shallower threshold search, fewer passes) and still close
# to the requested size on corpora of a few megabytes; --min-count raises the floor.
_LEARN_PARAMS = {"upper_thresh": 500, "num_iterations": 2}
MIN_COUNT = 2
_DEFAULT_OUTPUTS = {"wordpiece": "vocab.txt", "bpe": "bpe_vocab", "sentencepiece": "spiece.model"}
# What `--overwrite` may replace (see `claim_output`).
_OUTPUT_KINDS = {"wordpiece": ("a vocabulary file", ()),
                 "bpe": ("a BPE vocabulary", ("vocab.json", "merges.txt")),
                 "sentencepiece": ("a SentencePiece model file", ())}


def add_arguments(parser):
    parser.add_argument("inputs", nargs="+", metavar="TEXT",
                        help="UTF-8 text files or globs")
    parser.add_argument("--kind", choices=sorted(_DEFAULT_OUTPUTS), default="wordpiece",
                        help="wordpiece: BERT's vocab.txt; bpe: RoBERTa's vocab.json and "
                             "merges.txt, in a folder; sentencepiece: ALBERT's spiece.model")
    parser.add_argument("-o", "--output",
                        help="the file (a folder for bpe) to write; default: "
                             + ", ".join(f"{v} ({k})" for k, v in _DEFAULT_OUTPUTS.items()))
    parser.add_argument("--vocab-size", type=int, default=8000,
                        help="most tokens, the special tokens included")
    parser.add_argument("--cased", action="store_true",
                        help="keep case and accents; default: uncased (BPE is always cased)")
    parser.add_argument("--min-count", type=positive_int, metavar="N",
                        help="least number of times a wordpiece (a BPE merge) must occur "
                             f"(default: {MIN_COUNT}); not for sentencepiece, whose trainer "
                             "keeps what fits the size")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def learn_vocab(inputs, output, vocab_size, lower_case=True, min_count=MIN_COUNT):
    """Learns a vocabulary from `inputs` and writes it to `output`; returns its tokens."""
    from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab

    try:
        with stage(f"learning a {vocab_size}-token vocabulary from {len(inputs)} file(s)"):
            return learn_wordpiece_vocab(
                inputs, vocab_size, lower_case=lower_case, output_file=output,
                learn_params={**_LEARN_PARAMS, "lower_thresh": min_count})
    except ValueError as e:  # empty input files, a vocab_size below the alphabet
        raise UserError(str(e)) from None


def _learn_other_kind(args, partial):
    """Learns a BPE or SentencePiece vocabulary into `partial`; returns what was written."""
    from keras_bert_core.text.vocabulary import learning as vocab_learning

    if args.kind == "bpe" and args.cased:
        raise UserError("--cased: byte-level BPE vocabularies are always cased")
    try:
        with stage(f"learning a {args.vocab_size}-token {args.kind} vocabulary from "
                   f"{len(args.inputs)} file(s)"):
            if args.kind == "bpe":
                vocab_learning.learn_bpe_vocab(args.inputs, args.vocab_size, partial,
                                               args.min_count)
                return "vocab.json and merges.txt"
            vocab_learning.learn_sentencepiece_model(args.inputs, args.vocab_size, partial,
                                                     lower_case=not args.cased)
            return "a SentencePiece model"
    except ValueError as e:  # empty input files, a vocabulary the text cannot fill
        raise UserError(str(e)) from None


def run(args):
    if args.vocab_size < 10:
        raise UserError(f"--vocab-size {args.vocab_size} is too small")
    if args.kind == "sentencepiece" and args.min_count is not None:
        raise UserError("--min-count is for wordpiece and bpe vocabularies; SentencePiece's "
                        "trainer keeps the pieces that fit --vocab-size")
    args.min_count = args.min_count or MIN_COUNT
    output = args.output or _DEFAULT_OUTPUTS[args.kind]
    claim_output(output, args.overwrite, make_parent=True,
                 inputs=[path for pattern in args.inputs for path in glob.glob(pattern)],
                 kind=_OUTPUT_KINDS[args.kind])
    with replaced_when_complete(output) as partial:
        if args.kind == "wordpiece":
            vocab = learn_vocab(args.inputs, partial, args.vocab_size, not args.cased,
                                args.min_count)
            written = f"{len(vocab)} tokens"
        else:
            written = _learn_other_kind(args, partial)
    say(f"wrote {written} to {output}")
    print(output)
