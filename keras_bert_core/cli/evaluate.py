"""`kbc evaluate`: score a fine-tuned model on labeled data."""

import json

from keras_bert_core.cli import UserError
from keras_bert_core.cli.finetuned import load_finetuned
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.options import positive_int
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import add_data_options, data_settings, load_tfds
from keras_bert_core.files import replaced_when_complete


def add_arguments(parser):
    parser.add_argument("model", help="a fine-tuned .keras file (a kbc fine-tuning run's "
                                      "model.keras, also copied out of it), its run, or a "
                                      "preset folder")
    parser.add_argument("data", nargs="?", metavar="FILE",
                        help="labeled data, in the format the task trained on")
    parser.add_argument("--tfds", metavar="NAME", help="a TensorFlow Datasets task instead")
    parser.add_argument("--split", default="validation", help="--tfds split")
    parser.add_argument("--tfds-data-dir", metavar="DIR", help="where TFDS keeps its data")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="examples per batch")
    parser.add_argument("-o", "--output", metavar="JSON", help="also write the metrics here")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    add_data_options(parser, with_defaults=False)


def run(args):
    if (args.data is None) == (args.tfds is None):
        raise UserError("pass the data to score: a FILE or --tfds NAME")
    if args.output:
        claim_output(args.output, args.overwrite, make_parent=True,
                     inputs=[args.model, args.data])
    model, task, preprocessor = load_finetuned(args.model)
    task.settings.update(data_settings(args))
    if args.tfds:
        data = load_tfds(task, args.tfds, args.split, args.tfds_data_dir)
    else:
        data = task.load(args.data)
    say(f"scoring {args.model} on {len(data)} {task.name} examples")
    metrics = task.evaluate(model, data, preprocessor, args.batch_size)
    text = json.dumps(metrics, indent=2)
    if args.output:
        with replaced_when_complete(args.output) as partial:
            with open(partial, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    print(text)
