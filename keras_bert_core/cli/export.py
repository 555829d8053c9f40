"""`kbc export`: a fine-tuned model as a SavedModel (TF Serving) and/or TFLite files, both
taking raw text (RoBERTa's TFLite files take token ids: its byte-level BPE tokenizer has no
TFLite ops), and/or a preset folder (`keras_bert_core.presets`) that
`kbc.from_preset` loads and `kbc export`, `predict`, `evaluate` and `finetune --checkpoint`
take as they take the run."""

import contextlib
import os

from keras_bert_core.cli import UserError
from keras_bert_core.cli.finetuned import load_finetuned
from keras_bert_core.cli.messages import native_log_hidden, say, stage
from keras_bert_core.cli.model_building import run_directory_of
from keras_bert_core.cli.options import int_at_least
from keras_bert_core.cli.run_dir import claim_output, enclosing_run
from keras_bert_core.cli.run_lock import lock_run
from keras_bert_core.files import replaced_when_complete

FORMATS = ("saved_model", "tflite", "preset")
DEFAULT_FORMATS = ("saved_model", "tflite")
PRESET_FOLDER = "preset"
# TFLite variants: float32, int8 weights (dynamic range), float16 weights, full integer
# (int8 weights and activations, calibrated on --calibration texts).
TFLITE_VARIANTS = {"float32": None, "dynamic": "dynamic", "float16": "float16",
                   "int8": "int8"}
DEFAULT_TFLITE_VARIANTS = ["float32"]


def add_arguments(parser):
    parser.add_argument("model", help="a fine-tuned .keras file (a kbc fine-tuning run's "
                                      "model.keras, also copied out of it), its run, or a "
                                      "preset folder")
    parser.add_argument("-o", "--output", required=True, metavar="DIR",
                        help="folder to write: saved_model/, model*.tflite and preset/")
    parser.add_argument("--format", nargs="+", choices=FORMATS, default=list(DEFAULT_FORMATS),
                        help="what to write; preset: a folder with the model, its vocabulary, "
                             "casing, sequence length, labels and a model card (README.md), "
                             "which kbc.from_preset(folder) loads and kbc export, predict, "
                             "evaluate and finetune --checkpoint take")
    parser.add_argument("--tflite-variants", nargs="+", choices=sorted(TFLITE_VARIANTS),
                        default=DEFAULT_TFLITE_VARIANTS,
                        help="TFLite weights: float32 (model.tflite), dynamic (int8 weights, "
                             "model_dynamic.tflite), float16 (model_float16.tflite), int8 "
                             "(int8 weights and activations calibrated on --calibration, "
                             "model_int8.tflite)")
    parser.add_argument("--calibration", metavar="FILE",
                        help="for --tflite-variants int8: texts like those the app will "
                             "serve, one a line (UTF-8; a pair task's two texts "
                             "tab-separated, or JSON lines keyed by the inputs); the int8 "
                             "labels are checked against float32 on them")
    parser.add_argument("--tflite-fixed-shape", action="store_true",
                        help="pad every text of the .tflite files to the run's seq_length, "
                             "for delegates that need fixed tensor shapes (GPU, NNAPI); by "
                             "default a call is padded to its longest text only")
    parser.add_argument("--name", help="write the SavedModel in TF Serving's layout, "
                                       "<output>/<name>/1, instead of <output>/saved_model")
    # Defaults: export_saved_model's (see export/README.md), not copied here.
    parser.add_argument("--max-batch-size", type=int_at_least(0), metavar="ROWS",
                        help="the most texts one SavedModel request may hold; larger requests "
                             "fail (0: no limit; default: export_saved_model's)")
    parser.add_argument("--max-text-bytes", type=int_at_least(0), metavar="BYTES",
                        help="the SavedModel and the .tflite files cut longer texts to this "
                             "many bytes before tokenization (0: no cut; default: "
                             "export_saved_model's and export_tflite's)")
    parser.add_argument("--null-score-threshold", type=float, metavar="MARGIN",
                        help="a SQuAD 2.0 model answers nothing when the [CLS] (null) score "
                             "beats the best span's by more than this (default: the run's, "
                             "0 unless it was given; kbc evaluate reports the best one)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")


# What `--overwrite` may replace as an export folder: any format's output, or a SavedModel
# in TF Serving's layout (`--name`).
EXPORT_FOLDER = ("a kbc export", ("saved_model", "model*.tflite", PRESET_FOLDER,
                                  "*/[0-9]*/saved_model.pb"))


def tflite_file(variant):
    return "model.tflite" if variant == "float32" else f"model_{variant}.tflite"


def _task_options(task):
    """The exporters' (and `serving_task`'s) options that come from the fine-tuning task."""
    return {"pairs": getattr(task, "pairs", False),
            "label_names": task.settings.get("label_names"),
            "max_answer_length": task.settings["max_answer_length"],
            "null_score_threshold": task.null_score_threshold()}


def export(model, task, preprocessor, output, formats=DEFAULT_FORMATS,
           tflite_variants=("float32",), name=None, limits=None, calibration=None,
           tflite_fixed_shape=False, source=None):
    """Writes the exports into `output`; returns `{export path: size in bytes}`. `limits`:
    the SavedModel's `max_batch_size` and `max_text_bytes` (its defaults if not given); the
    `.tflite` files take the same `max_text_bytes` (they have no batch limit).
    `calibration`: the int8 variant's calibration texts, dicts keyed by the text inputs.
    `tflite_fixed_shape`: pad the `.tflite` files' texts to `seq_length`. `source`: the run
    or preset the model was loaded from, whose training record goes into a preset's card."""
    from keras_bert_core.export import export_saved_model, export_tflite

    options = _task_options(task)
    tflite_inputs = tflite_input_kind(preprocessor)
    written = []
    if "preset" in formats:
        with stage("writing the preset"):
            written.append(write_preset(model, task, preprocessor,
                                        os.path.join(output, PRESET_FOLDER), source))
    text_limit = {key: value for key, value in (limits or {}).items()
                  if key == "max_text_bytes"}
    if "saved_model" in formats:
        with stage("writing the SavedModel"), _refusal("the SavedModel"):
            written.append(export_saved_model(
                model, preprocessor, output if name else os.path.join(output, "saved_model"),
                name=name, **options, **(limits or {})))
    if "tflite" in formats:
        if tflite_inputs == "ids":
            say("a byte-level BPE (RoBERTa) tokenizer has no TFLite ops: the .tflite files "
                "take token_ids, segment_ids and padding_mask (the app tokenizes, e.g. with "
                "Hugging Face tokenizers); the SavedModel takes text")
        for variant in tflite_variants:
            # TFLite's int8 quantizer prints "fully_quantize: 0, ..." to stderr, even with -q.
            quiet = native_log_hidden() if variant == "int8" else contextlib.nullcontext()
            with stage(f"converting to TFLite ({variant} weights)"), _refusal(
                    f"the {variant} .tflite file"), quiet:
                written.append(export_tflite(
                    model, preprocessor, os.path.join(output, tflite_file(variant)),
                    quantize=TFLITE_VARIANTS[variant], inputs=tflite_inputs, **options,
                    **text_limit,
                    calibration_texts=calibration if variant == "int8" else None,
                    static_shape=True if tflite_fixed_shape else None))
    return {path: _size(path) for path in written}


def write_preset(model, task, preprocessor, path, source=None):
    """Saves a fine-tuned model as a preset folder, with the task settings that `kbc`
    reads it by and, from `source` (its run or preset), how it was trained and its
    metrics."""
    from keras_bert_core.presets import save_to_preset, training_record

    training, metrics = training_record(source) if source else ({}, {})
    return save_to_preset(model, preprocessor, path, task_settings=task.settings,
                          training=training, metrics=metrics)


@contextlib.contextmanager
def _refusal(what):
    """The exporters' refusals (an op outside the allowlist, an option that does not fit
    the model) as one line naming the file that could not be written."""
    try:
        yield
    except ValueError as e:
        raise UserError(f"cannot write {what}: {e}") from None


def tflite_input_kind(preprocessor):
    """What the `.tflite` files take: "text", or "ids" for byte-level BPE (RoBERTa), whose
    tokenizer needs ops that TFLite lacks (see `export_tflite`)."""
    from keras_bert_core.text.vocabulary.files import BYTE_PAIR

    return "ids" if preprocessor.tokenizer_kind == BYTE_PAIR else "text"


def text_inputs(model, task, preprocessor):
    """The text inputs of the exported signature, in the order it packs them."""
    from keras_bert_core.tasks.serving_dispatch import serving_task

    return serving_task(model, preprocessor, **_task_options(task)).text_inputs


def check_calibration(path):
    """Fails, in the user's words, on a `--calibration` file that is missing, empty or
    not UTF-8 text (before the model loads)."""
    from keras_bert_core.cli.tasks import check_input_text

    if not os.path.isfile(path):
        raise UserError(f"--calibration {path}: no such file")
    check_input_text(path, command="--calibration",
                     purpose="no texts to calibrate the int8 model on")


def read_calibration(path, names):
    """The calibration texts of `--calibration FILE`, read as `kbc predict` reads an
    export's input: dicts keyed by `names`."""
    from keras_bert_core.cli.predict import read_requests

    try:
        return read_requests(path, names)
    except UserError as e:
        raise UserError(f"--calibration {path}: {e}") from None


def label_agreement(float_path, int8_path, requests):
    """`(agreeing, total, what)`: how many requests get the same answer (labels, or answer
    span) from both `.tflite` files; None for models without such answers."""
    import numpy as np

    from keras_bert_core.cli.predict import load_tflite

    answers = []
    for path in (float_path, int8_path):
        runner, names = load_tflite(path)
        answers.append([runner(**{name: np.array([request[name]], dtype=object)
                                  for name in names}) for request in requests])
    keys = next((keys for keys in (("label",), ("answer_start", "answer_end"))
                 if all(key in answers[0][0] for key in keys)), None)
    if keys is None:
        return None
    agreeing = sum(all(np.array_equal(a[key], b[key]) for key in keys)
                   for a, b in zip(*answers, strict=True))
    return agreeing, len(requests), "labels" if keys == ("label",) else "answer spans"


def _report_int8_agreement(output, tflite_variants, model, preprocessor, task, calibration,
                           limits):
    from keras_bert_core.export import export_tflite

    if tflite_input_kind(preprocessor) == "ids":
        say("int8: files that take ids are not compared with float32 here; check their "
            "outputs against the SavedModel's")
        return
    float_path = os.path.join(output, tflite_file("float32"))
    with stage("checking the int8 labels against float32"):
        if "float32" not in tflite_variants:  # a reference, not kept
            import tempfile

            scratch = tempfile.mkdtemp()
            float_path = export_tflite(
                model, preprocessor, os.path.join(scratch, "model.tflite"),
                **_task_options(task),
                **{k: v for k, v in (limits or {}).items() if k == "max_text_bytes"})
        agreement = label_agreement(float_path, os.path.join(output, tflite_file("int8")),
                                    calibration)
        if "float32" not in tflite_variants:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)
    if agreement is None:
        say("int8: this model answers no labels to compare with float32; check its outputs "
            "with kbc predict")
        return
    agreeing, total, what = agreement
    say(f"int8 {what} agree with float32 on {agreeing} of {total} calibration texts "
        f"({100 * agreeing / total:.1f}%)")


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, file))
               for folder, _, files in os.walk(path) for file in files)


# Options that shape one kind of export, and the --format values they need.
_FORMAT_OPTIONS = {"tflite_variants": ("tflite",), "tflite_fixed_shape": ("tflite",),
                   "name": ("saved_model",), "max_batch_size": ("saved_model",),
                   "max_text_bytes": ("saved_model", "tflite")}


def _check_formats_written(args):
    """An option given for an export that `--format` leaves out is refused, not ignored."""
    for name, formats in _FORMAT_OPTIONS.items():
        given = getattr(args, name) not in (None, False, DEFAULT_TFLITE_VARIANTS)
        if given and not set(formats) & set(args.format):
            raise UserError(f"--{name.replace('_', '-')} needs --format "
                            f"{' or '.join(formats)}")


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
    claim_output(args.output, args.overwrite, inputs=(
        args.model, run_directory_of(args.model), *filter(None, [args.calibration])),
        kind=EXPORT_FOLDER)
    run = enclosing_run(args.output)
    if run:  # an export into a run folder writes that run: not while another command does
        lock_run(run)
    _check_formats_written(args)
    int8 = "int8" in args.tflite_variants and "tflite" in args.format
    if int8 and args.calibration is None:
        raise UserError("--tflite-variants int8 needs --calibration FILE: texts like those "
                        "the app will serve, one a line, to set the int8 activation scales")
    if args.calibration is not None and not int8:
        raise UserError("--calibration is used only with --tflite-variants int8")
    if int8:
        check_calibration(args.calibration)
    model, task, preprocessor = load_finetuned(args.model)
    if args.null_score_threshold is not None:
        task.settings["null_score_threshold"] = args.null_score_threshold
    calibration = (read_calibration(args.calibration, text_inputs(model, task, preprocessor))
                   if int8 else None)
    # The folder appears, or replaces the old one, only once every export in it is written.
    with replaced_when_complete(args.output) as partial:
        os.makedirs(partial)
        sizes = export(model, task, preprocessor, partial, args.format, args.tflite_variants,
                       args.name, limits, calibration, args.tflite_fixed_shape,
                       source=args.model)
        if int8:
            _report_int8_agreement(partial, args.tflite_variants, model, preprocessor, task,
                                   calibration, limits)
    for path, size in sizes.items():
        say(f"{size / 1e6:8.2f} MB  {os.path.join(args.output, os.path.relpath(path, partial))}")
    print(args.output)
