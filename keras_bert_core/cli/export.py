"""`kbc export`: a fine-tuned model as a SavedModel (TF Serving) and/or TFLite files, both
taking raw text."""

import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.common import say, stage
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import load_finetuned

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
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


def tflite_file(variant):
    return "model.tflite" if variant == "float32" else f"model_{variant}.tflite"


def export(model, task, preprocessor, output, formats=FORMATS, tflite_variants=("float32",),
           name=None):
    """Writes the exports into `output`; returns `{export path: size in bytes}`."""
    from keras_bert_core.export import export_saved_model, export_tflite

    options = {"pairs": getattr(task, "pairs", False),
               "label_names": task.settings.get("label_names"),
               "max_answer_length": task.settings["max_answer_length"]}
    written = []
    if "saved_model" in formats:
        with stage("writing the SavedModel"):
            written.append(export_saved_model(
                model, preprocessor, output if name else os.path.join(output, "saved_model"),
                name=name, **options))
    if "tflite" in formats:
        for variant in tflite_variants:
            with stage(f"converting to TFLite ({variant} weights)"):
                written.append(export_tflite(
                    model, preprocessor, os.path.join(output, tflite_file(variant)),
                    quantize=TFLITE_VARIANTS[variant], **options))
    return {path: _size(path) for path in written}


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, file))
               for folder, _, files in os.walk(path) for file in files)


def run(args):
    claim_output(args.output, args.overwrite)
    if "tflite" not in args.format and args.tflite_variants != ["float32"]:
        raise UserError("--tflite-variants needs --format tflite")
    model, task, preprocessor = load_finetuned(args.model)
    os.makedirs(args.output)
    sizes = export(model, task, preprocessor, args.output, args.format, args.tflite_variants,
                   args.name)
    for path, size in sizes.items():
        say(f"{size / 1e6:8.2f} MB  {path}")
    print(args.output)
