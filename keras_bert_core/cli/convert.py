"""`kbc convert`: a Hugging Face, google-research TF1, Model Garden TF2 or keras-hub
checkpoint to a `.keras` file that `kbc finetune --checkpoint` and `keras.saving` load."""

import os
import shutil

from keras_bert_core.cli import UserError
from keras_bert_core.cli.common import VOCAB_FILE, say, stage
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.files import replaced_when_complete


def add_arguments(parser):
    parser.add_argument("source", help="the checkpoint: a folder, a file, or a TF checkpoint "
                                       "prefix; its format is detected")
    parser.add_argument("output", help="the .keras file to write")
    parser.add_argument("--config", metavar="JSON",
                        help="the BertConfig to use instead of the one stored with the weights "
                             "(needed for Model Garden checkpoints saved without one)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def run(args):
    from keras_bert_core.checkpoints import convert_checkpoint, detect_format
    from keras_bert_core.config import BertConfig

    if not args.output.endswith(".keras"):
        raise UserError(f"{args.output}: the output must end in .keras")
    claim_output(args.output, args.overwrite, make_parent=True,
                 inputs=[args.source, args.config])
    config = None
    if args.config:
        try:
            config = BertConfig.from_json(args.config)
        except ValueError as e:
            raise UserError(str(e)) from None
    fmt = detect_format(args.source)
    with stage(f"converting the {fmt} checkpoint {args.source}"):
        with replaced_when_complete(args.output) as partial:
            encoder = convert_checkpoint(args.source, partial, config)
    say(f"wrote {args.output}: {encoder.count_params():,} weights, "
        f"{encoder.config.num_layers} layers x {encoder.config.hidden_size}")
    # Keep the vocabulary with the model, where `kbc finetune --checkpoint` looks for it.
    folder = args.source if os.path.isdir(args.source) else os.path.dirname(args.source)
    vocab, copy = os.path.join(folder, VOCAB_FILE), os.path.join(
        os.path.dirname(os.path.abspath(args.output)), VOCAB_FILE)
    if os.path.isfile(vocab) and not os.path.exists(copy):
        shutil.copyfile(vocab, copy)
        say(f"copied {vocab} to {copy}")
    print(args.output)
