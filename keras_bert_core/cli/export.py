"""`kbc export`: a fine-tuned model as a SavedModel (TF Serving) and/or TFLite files, both
taking raw text."""

import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.common import run_directory_of, say, stage
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import load_finetuned
from keras_bert_core.files import replaced_when_complete

FORMATS = ("saved_model", "tflite")
# TFLite weight variants: float32, int8 weights (dynamic range), float16 weights.
TFLITE_VARIANTS = {"float32": None, "dynamic": "dynamic", "float16": "float16"}


def add_arguments(parser):
    parser.add_argument("model", help="a kbc fine-tuning run directory, or its model.keras")
    parser.add_argument("-o", "--output", required=True, metavar="DIR",
                        help="folder to write: saved_model/ and model*.tflite")
    parser.add_argument("--format", nargs="+", choices=FORMATS, default=list(FORMATS),
                        help="what to write")
    parser.add_argument("--tflite-variants", nargs="+", choices=sorted(TFLITE_VARIANTS),
                        default=["float32"],
                        help="TFLite weights: float32 (model.tflite), dynamic (int8 weights, "
                             "model_dynamic.tflite), float16 (model_float16.tflite)")
    parser.add_argument("--name", help="write the SavedModel in TF Serving's layout, "
                                       "<output>/<name>/1, instead of <output>/saved_model")
    # Defaults: export_saved_model's (see export/README.md), not copied here.
    parser.add_argument("--max-batch-size", type=int, metavar="ROWS",
                        help="the most texts one SavedModel request may hold; larger requests "
                             "fail (0: no limit; default: export_saved_model's)")
    parser.add_argument("--max-text-bytes", type=int, metavar="BYTES",
                        help="the SavedModel and the .tflite files cut longer texts to this "
                             "many bytes before tokenization (0: no cut; default: "
                             "export_saved_model's and export_tflite's)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def tflite_file(variant):
    return "model.tflite" if variant == "float32" else f"model_{variant}.tflite"


def export(model, task, preprocessor, output, formats=FORMATS, tflite_variants=("float32",),
           name=None, limits=None):
    """Writes the exports into `output`; returns `{export path: size in bytes}`. `limits`:
    the SavedModel's `max_batch_size` and `max_text_bytes` (its defaults if not given); the
    `.tflite` files take the same `max_text_bytes` (they have no batch limit)."""
    from keras_bert_core.export import export_saved_model, export_tflite

    options = {"pairs": getattr(task, "pairs", False),
               "label_names": task.settings.get("label_names"),
               "max_answer_length": task.settings["max_answer_length"]}
    written = []
    text_limit = {key: value for key, value in (limits or {}).items()
                  if key == "max_text_bytes"}
    if "saved_model" in formats:
        with stage("writing the SavedModel"):
            written.append(export_saved_model(
                model, preprocessor, output if name else os.path.join(output, "saved_model"),
                name=name, **options, **(limits or {})))
    if "tflite" in formats:
        for variant in tflite_variants:
            with stage(f"converting to TFLite ({variant} weights)"):
                written.append(export_tflite(
                    model, preprocessor, os.path.join(output, tflite_file(variant)),
                    quantize=TFLITE_VARIANTS[variant], **options, **text_limit))
    return {path: _size(path) for path in written}


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, file))
               for folder, _, files in os.walk(path) for file in files)


def run(args):
    from keras_bert_core.export.limits import check_limits
    from keras_bert_core.export.saved_model import check_model_name

    limits = {name: value or None for name, value in (
        ("max_batch_size", args.max_batch_size), ("max_text_bytes", args.max_text_bytes))
        if value is not None}
    try:
        if args.name is not None:
            check_model_name(args.name)
        check_limits(limits.get("max_batch_size"), limits.get("max_text_bytes"))
    except ValueError as e:
        raise UserError(str(e)) from None
    # What the command reads: the run folder (config, vocabulary) and the model in it.
    claim_output(args.output, args.overwrite, inputs=(args.model, run_directory_of(args.model)))
    if "tflite" not in args.format and args.tflite_variants != ["float32"]:
        raise UserError("--tflite-variants needs --format tflite")
    model, task, preprocessor = load_finetuned(args.model)
    # The folder appears, or replaces the old one, only once every export in it is written.
    with replaced_when_complete(args.output) as partial:
        os.makedirs(partial)
        sizes = export(model, task, preprocessor, partial, args.format, args.tflite_variants,
                       args.name, limits)
    for path, size in sizes.items():
        say(f"{size / 1e6:8.2f} MB  {os.path.join(args.output, os.path.relpath(path, partial))}")
    print(args.output)
