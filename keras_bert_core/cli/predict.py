"""`kbc predict`: answers of a fine-tuned model, a SavedModel export or a .tflite file."""

import json
import os
import re
import sys

import numpy as np

from keras_bert_core.cli import UserError
from keras_bert_core.cli.finetuned import load_finetuned
from keras_bert_core.cli.messages import native_log_hidden, progress, say
from keras_bert_core.cli.options import positive_int
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import (
    add_data_options,
    check_input_text,
    data_settings,
    numbered_lines,
    read_input,
)
from keras_bert_core.extras import require
from keras_bert_core.files import replaced_when_complete

# Text inputs of exported signatures, in the order the serving tasks pack them; plain input
# lines hold them tab-separated in this order.
EXPORT_INPUTS = ("text", "text_a", "text_b", "question", "context", "choices")


def add_arguments(parser):
    parser.add_argument("model", help="a fine-tuned .keras file (a kbc fine-tuning run's "
                                      "model.keras, also copied out of it), its run, a preset "
                                      "folder, a SavedModel directory from `kbc export`, or a "
                                      ".tflite file")
    parser.add_argument("-i", "--input", metavar="FILE",
                        help="what to answer (default: stdin). For a run: a data file in the "
                             "task's format, or text lines (.txt; pairs tab-separated; ner: "
                             "words separated by spaces). For an export: text lines (inputs "
                             "tab-separated) or JSON lines keyed by the signature's inputs")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write one JSON answer a line (default: stdout)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="examples per batch")
    add_data_options(parser, with_defaults=False)


def _json_ready(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        return [_json_ready(v) for v in value] if value.dtype == object else value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def read_requests(path, names, num_choices=None):
    """One dict of input name -> value per input line: tab-separated fields in the order of
    `names`, or JSON lines keyed by them; each a string, but `choices`: a JSON list of
    `num_choices` strings."""
    requests = []
    for number, line in numbered_lines(path):
        if line.lstrip().startswith("{"):
            try:
                request = json.loads(line)
            except json.JSONDecodeError as e:
                raise UserError(f"input line {number}: malformed JSON ({e.msg})") from None
        else:
            fields = line.split("\t")
            if len(fields) != len(names):
                raise UserError(f"input line {number}: expected {len(names)} tab-separated "
                                f"field(s) ({', '.join(names)}), found {len(fields)}")
            request = dict(zip(names, fields, strict=True))
        missing = [name for name in names if name not in request]
        if missing:
            raise UserError(f"input line {number}: the model needs {list(names)}; missing "
                            f"{missing} (give tab-separated fields or JSON lines)")
        for name in names:
            _check_value(request[name], name, number, num_choices)
        requests.append(request)
    return requests


def _check_value(value, name, number, num_choices):
    """Raises UserError unless `value` is what input `name` takes: a string, or for
    `choices` a list of `num_choices` strings (any number with None); TensorFlow and LiteRT
    fail deep otherwise."""
    if name != "choices":
        if not isinstance(value, str):
            raise UserError(f"input line {number}: {name!r} must be a string, got "
                            f"{json.dumps(value)}")
        return
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)
            and len(value) == (num_choices or len(value))):
        wanted = f"{num_choices} strings (the model's number of choices)" if num_choices \
            else "strings"
        raise UserError(f"input line {number}: 'choices' must be a JSON list of {wanted}, "
                        f"got {json.dumps(value, ensure_ascii=False)}")


def _saved_model_answers(path, input_path, batch_size):
    import tensorflow as tf

    from keras_bert_core.export import load_saved_model

    try:
        function = load_saved_model(path).signatures["serving_default"]
    except ValueError as e:
        raise UserError(str(e)) from None
    specs = function.structured_input_signature[1]
    names = [name for name in EXPORT_INPUTS if name in specs]
    choices = specs.get("choices")
    requests = read_requests(input_path, names, choices and choices.shape[1])
    for start in progress(range(0, len(requests), batch_size), title="predicting"):
        batch = requests[start:start + batch_size]
        try:
            outputs = function(**{name: tf.constant([r[name] for r in batch])
                                  for name in names})
        except tf.errors.InvalidArgumentError as e:  # the export's request limit
            refused = re.search(r"assertion failed: \[(.*?)\] \[Condition", e.message)
            if refused is None:
                raise
            hint = " (--batch-size)" if "max_batch_size" in refused.group(1) else ""
            raise UserError(f"{path}: {refused.group(1)}{hint}") from None
        outputs = {name: value.numpy() for name, value in outputs.items()}
        for row in range(len(batch)):
            yield {name: _json_ready(value[row]) for name, value in sorted(outputs.items())}


def load_tflite(path):
    """`(signature runner, text input names)` of a `.tflite` file from `kbc export`, in the
    LiteRT interpreter with tf.text's custom ops registered."""
    from tensorflow_text import tflite_registrar

    litert = require("ai_edge_litert.interpreter", f"running {path}")
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    try:
        interpreter = litert.InterpreterWithCustomOps(
            model_path=path, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    except ValueError as e:  # a truncated or foreign file: LiteRT cannot parse it
        raise UserError(f"{path} is not a complete .tflite file ({e})") from None
    with native_log_hidden():  # LiteRT's "Created TensorFlow Lite XNNPACK delegate" line
        interpreter.allocate_tensors()
    runner = interpreter.get_signature_runner()
    details = runner.get_input_details()
    if any(name not in EXPORT_INPUTS for name in details):
        raise UserError(f"{path} takes {sorted(details)}, not text (e.g. a RoBERTa file, "
                        "whose app tokenizes); predict reads text: give it the SavedModel "
                        "or the run")
    return runner, [name for name in EXPORT_INPUTS if name in details]


def _tflite_answers(path, input_path):
    runner, names = load_tflite(path)
    choices = runner.get_input_details().get("choices")
    num_choices = choices and int(choices["shape_signature"][1])
    # The interpreter answers one text (one row) per call, as on a phone.
    for request in progress(read_requests(input_path, names, num_choices),
                            title="predicting"):
        outputs = runner(**{name: np.array([request[name]], dtype=object) for name in names})
        answer = {name: _json_ready(value[0]) for name, value in outputs.items()}
        yield dict(sorted(_cut_from_text(request, answer).items()))


def _cut_from_text(request, answer):
    """Adds the strings a SavedModel cuts from the text (`answer`, `words`), which TFLite
    cannot, from the byte offsets the file answers, as an app does."""
    if "answer_start" in answer:
        context = request["context"].encode("utf-8")
        answer["answer"] = _json_ready(context[answer["answer_start"]:answer["answer_end"]])
    if "word_begin" in answer:
        text = request["text"].encode("utf-8")
        answer["words"] = [_json_ready(text[begin:end]) for begin, end in
                           zip(answer["word_begin"], answer["word_end"], strict=True)]
    return answer


def _serving_versions(path):
    """The version folders (`1`, `2`...) of a SavedModel under `path`, in order."""
    if not os.path.isdir(path) or os.path.isfile(os.path.join(path, "config.json")):
        return []
    return sorted((name for name in os.listdir(path) if name.isdigit()
                   and os.path.isfile(os.path.join(path, name, "saved_model.pb"))), key=int)


def answers(args):
    """The answers, one JSON-ready dict per input example."""
    export = args.model.endswith(".tflite") or os.path.isfile(
        os.path.join(args.model, "saved_model.pb"))
    run_options = data_settings(args)
    if export and run_options:
        given = ", ".join("--" + name.replace("_", "-") for name in run_options)
        raise UserError(f"{given}: {args.model} is an export, which reads its inputs and "
                        "answers as it was exported; these options are for a run")
    versions = _serving_versions(args.model)
    if versions:  # TF Serving's base path, as `kbc export --name` writes it
        raise UserError(f"{args.model} holds TF Serving versions ({', '.join(versions)}) "
                        f"of a SavedModel: give one, e.g. "
                        f"{os.path.join(args.model, versions[-1])}")
    if args.model.endswith(".tflite"):
        return _tflite_answers(args.model, args.input)
    if export:
        return _saved_model_answers(args.model, args.input, args.batch_size)
    model, task, preprocessor = load_finetuned(args.model)
    task.settings.update(data_settings(args))
    data = read_input(task, args.input)
    say(f"answering {len(data)} {task.name} examples")
    return task.predict(model, data, preprocessor, args.batch_size)


def _write(answers, output):
    for answer in answers:
        output.write(json.dumps(answer, ensure_ascii=False) + "\n")


def run(args):
    inputs = (args.input, args.model)
    if args.output:
        claim_output(args.output, args.overwrite, make_parent=True, inputs=inputs)
    if not os.path.exists(args.model):  # before waiting for standard input
        raise UserError(f"{args.model}: no such file")
    check_input_text(args.input)
    if not args.output:
        _write(answers(args), sys.stdout)
        return
    # A failed or killed run leaves no partial answers file (and an old one in place).
    with replaced_when_complete(args.output) as partial:
        with open(partial, "w", encoding="utf-8") as output:
            _write(answers(args), output)
