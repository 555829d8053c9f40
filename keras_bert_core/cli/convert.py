"""`kbc convert`: a Hugging Face (BERT, RoBERTa, ALBERT, DistilBERT), google-research TF1,
Model Garden TF2 or keras-hub checkpoint to a `.keras` file that `kbc finetune --checkpoint`
and `keras.saving` load, its vocabulary files copied beside it."""

import filecmp
import os
import shutil

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say, stage
from keras_bert_core.cli.model_building import checkpoint_folder, model_path
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.files import replaced_when_complete


def add_arguments(parser):
    parser.add_argument("source", help="the checkpoint: a folder (e.g. a Hugging Face BERT, "
                                       "RoBERTa, ALBERT or DistilBERT folder, or a kbc run), "
                                       "a file, a TF checkpoint prefix, or a Hub name "
                                       "(hf://org/name[@revision]); its format is "
                                       "detected")
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
    source = model_path(args.source)  # a kbc run: its model.keras (its encoder)
    fmt = detect_format(source)
    if fmt == "keras" and config is not None:
        raise UserError(f"--config {args.config}: {source} is a .keras file, which carries its "
                        "own config; leave --config out")
    vocabulary = _vocabulary_files(args.source, os.path.dirname(os.path.abspath(args.output)),
                                   args.output)
    with stage(f"converting the {fmt} checkpoint {args.source}"):
        with replaced_when_complete(args.output) as partial:
            encoder = convert_checkpoint(source, partial, config)
    say(f"wrote {args.output}: {encoder.count_params():,} weights, "
        f"{encoder.config.num_layers} layers x {encoder.config.hidden_size}")
    _copy_vocabulary(vocabulary)
    print(args.output)


def _vocabulary_files(source, destination, output):
    """`(original, copy)` of each of the checkpoint's vocabulary files (of any kind, with its
    tokenizer_config.json) and its place beside the output, where `kbc finetune
    --checkpoint` looks for them. A different file already in that place is refused: the
    output would be read with it."""
    from keras_bert_core.text.vocabulary.files import (
        SENTENCEPIECE,
        TOKENIZER_CONFIG,
        VOCABULARY_FILES,
        find_vocabulary,
    )

    folder = checkpoint_folder(source)
    try:
        vocabulary = find_vocabulary(folder)
    except ValueError:  # a checkpoint without its vocabulary
        say(f"no vocabulary beside {source}: pass --vocab when fine-tuning the output")
        return []
    files = (VOCABULARY_FILES[vocabulary.kind]
             if vocabulary.read_from is None and vocabulary.kind != SENTENCEPIECE
             else (os.path.basename(vocabulary.file),))  # read_from, or ALBERT's or DeBERTa's
    pairs = [(os.path.join(folder, name), os.path.join(destination, name))
             for name in (*files, TOKENIZER_CONFIG)]
    pairs = [(original, copy) for original, copy in pairs
             if os.path.isfile(original) and os.path.abspath(original) != copy]
    for original, copy in pairs:
        if os.path.exists(copy) and not filecmp.cmp(original, copy, shallow=False):
            raise UserError(f"{copy} is already there and is not the checkpoint's "
                            f"({original}): {output} would be read with it; write the "
                            "output into another folder")
    return pairs


def _copy_vocabulary(pairs):
    """Copies the vocabulary files `_vocabulary_files` found; the same files already there
    are kept."""
    for original, copy in pairs:
        if os.path.exists(copy):
            say(f"kept the {copy} already there")
            continue
        shutil.copyfile(original, copy)
        say(f"copied {original} to {copy}")
