"""Runs a keras_bert_core `.tflite` file in the LiteRT interpreter, tf.text ops registered.

Standalone: it needs `ai-edge-litert` and `tensorflow-text` (for its TFLite op registrar),
not keras_bert_core.

Usage:
    python export/run_tflite.py model.tflite "The battery lasts two days." "Too slow."
    python export/run_tflite.py pairs.tflite --input text_a="A man plays." \\
        --input text_b="Someone performs."
    python export/run_tflite.py choice.tflite --input text="The cat" \\
        --input choices="sat|ran|flew"
    python export/run_tflite.py ids.tflite --input token_ids=101,7592,102 \\
        --input segment_ids=0,0,0 --input padding_mask=1,1,1

Positional texts go to the model's single string input, one invocation per text (the
usual phone use). Each result prints as one JSON line: output name -> list.
"""

import argparse
import json
import sys

import numpy as np


def load(model_path):
    """A LiteRT interpreter for the file, with tf.text's custom ops registered."""
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    return InterpreterWithCustomOps(
        model_path=model_path, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)


def run(interpreter, inputs, signature=None):
    """Runs one signature on a batch.

    Args:
        interpreter: from `load`.
        inputs: dict of input name -> array-like, batch first (strings as `str` or
            `bytes`). Ids rows of a file exported with `static_shape=True` are padded
            with 0 to its `seq_length`.
        signature: signature name; the file's only signature by default.

    Returns:
        dict of output name -> numpy array. An empty batch gives empty outputs without
        invoking the interpreter (LiteRT kernels are not required to accept 0-row tensors).
    """
    signature = signature or next(iter(interpreter.get_signature_list()))
    runner = interpreter.get_signature_runner(signature)
    arrays = {}
    for name, detail in runner.get_input_details().items():
        if name not in inputs:
            raise ValueError(f"signature {signature!r} needs input {name!r}; "
                             f"got {sorted(inputs)}")
        arrays[name] = _as_input(inputs[name], detail, name)
    rows = {name: array.shape[0] for name, array in arrays.items()}
    if len(set(rows.values())) > 1:  # the graph would pair a row with every row of another
        raise ValueError(f"inputs must hold the same number of rows (one example a row); "
                         f"got {rows}")
    ids = {name: list(np.shape(inputs[name])) for name, array in arrays.items()
           if array.dtype != object}  # as given, before padding to a fixed width
    if len({tuple(shape) for shape in ids.values()}) > 1:
        raise ValueError(f"ids inputs must have the same shape; got {ids}")
    if any(array.shape[0] == 0 for array in arrays.values()):
        return {name: np.zeros([0, *detail["shape"][1:]], detail["dtype"])
                for name, detail in runner.get_output_details().items()}
    return runner(**arrays)


def _as_input(value, detail, name):
    """`value` as the input takes it: UTF-8 bytes for strings, ids padded to the length."""
    if detail["dtype"] in (np.bytes_, np.object_):
        texts = np.asarray(value, dtype=object)
        if texts.size == 0:
            return texts.reshape(0, *detail["shape"][1:])
        shape = ["batch", *(size if size > 0 else "?" for size in detail["shape_signature"][1:])]
        if texts.ndim != len(shape) or any(size not in ("?", got) for size, got in
                                           zip(shape[1:], texts.shape[1:], strict=True)):
            raise ValueError(f"input {name!r} takes shape [{', '.join(map(str, shape))}]; got "
                             f"{list(texts.shape)}")
        # A command line's invalid UTF-8 reads as surrogates: its bytes go in as they were.
        encode = np.vectorize(lambda t: t.encode("utf-8", "surrogateescape")
                              if isinstance(t, str) else bytes(t), otypes=[object])
        return encode(texts)
    ids = np.asarray(value, dtype=detail["dtype"])
    length = detail["shape_signature"][-1]
    if length == -1:  # exported with a dynamic width: rows go in as they are
        return ids
    if ids.shape[-1] > length:
        raise ValueError(f"input {name!r} has {ids.shape[-1]} ids; the model takes at most "
                         f"{length}")
    return np.pad(ids, [(0, 0)] * (ids.ndim - 1) + [(0, length - ids.shape[-1])])


def _to_json(value):
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_to_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value.tolist() if isinstance(value, np.ndarray) else value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the .tflite file")
    parser.add_argument("texts", nargs="*", help="texts for a single-string-input model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE",
                        help="a named input: comma-separated ints for ids inputs, "
                             "|-separated texts for `choices`")
    parser.add_argument("--signature", help="signature name (default: the only one)")
    args = parser.parse_args(argv)

    interpreter = load(args.model)
    signature = args.signature or next(iter(interpreter.get_signature_list()))
    details = interpreter.get_signature_runner(signature).get_input_details()
    if args.texts:
        if len(details) != 1:
            parser.error(f"the model takes inputs {sorted(details)}; use --input NAME=VALUE")
        requests = [{next(iter(details)): [text]} for text in args.texts]
    else:
        request = {}
        for item in args.input:
            name, sep, value = item.partition("=")
            if not sep or name not in details:
                parser.error(f"--input {item!r}: expected NAME=VALUE with NAME among "
                             f"{sorted(details)}")
            if details[name]["dtype"] not in (np.bytes_, np.object_):
                try:
                    request[name] = [[int(v) for v in value.split(",")]]
                except ValueError:
                    parser.error(f"--input {item!r}: expected comma-separated integers")
            elif len(details[name]["shape"]) == 2:  # e.g. multiple-choice `choices`
                request[name] = [value.split("|")]
            else:
                request[name] = [value]
        requests = [request]
    for request in requests:
        try:
            outputs = run(interpreter, request, signature)
        except ValueError as e:  # a missing input, too many ids
            parser.error(str(e))
        print(json.dumps({name: _to_json(value) for name, value in sorted(outputs.items())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
