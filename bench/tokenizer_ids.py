"""Identical ids: our BertTokenizer (both pipelines) against Hugging Face `tokenizers`.

    python bench/tokenizer_ids.py [--vocab vocab.txt] [--cased] [--litert] [--all-code-points]

The same corpus and vocabulary as bench/tokenizer_throughput.py, so its speed figures
compare tokenizers that agree. A line counts when its whole id sequence equals the
reference's. Prints the first `--show` differing lines of each pipeline (to stderr), then
one JSON line. Besides the two pipelines run by TensorFlow:

- `--litert`: the TFLite-compatible pipeline converted to a .tflite string->ids model and
  run in the LiteRT interpreter, as a phone runs it;
- `--all-code-points`: every Unicode scalar value between ASCII letters, 64 per line, after
  the corpus.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402
from ai_edge_litert.interpreter import InterpreterWithCustomOps  # noqa: E402
from tokenizers import BertWordPieceTokenizer  # noqa: E402

from keras_bert_core.text import BertTokenizer  # noqa: E402

BATCH = 512


def tensorflow_pipeline(tokenizer):
    """`lines -> id lists`, the tokenizer run by TensorFlow."""
    tokenize = tf.function(tokenizer.call)

    def ids(lines):
        return [row for i in range(0, len(lines), BATCH)
                for row in tokenize(tf.constant(lines[i:i + BATCH])).to_list()]
    return ids


def litert_pipeline(tokenizer):
    """`lines -> id lists`, the tokenizer converted to a .tflite file run by LiteRT."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(text):
        ids = tokenizer(text)
        return {"ids": ids.flat_values, "row_splits": ids.row_splits}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [tokenize.get_concrete_function()], tokenizer)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    interpreter = InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=converter.convert())
    run = interpreter.get_signature_runner()

    def ids(lines):
        result = []
        for i in range(0, len(lines), BATCH):
            out = run(text=np.array(lines[i:i + BATCH], dtype=object))
            splits = out["row_splits"]
            result.extend(out["ids"][a:b].tolist()
                          for a, b in zip(splits[:-1], splits[1:], strict=True))
        return result
    return ids


def all_code_point_lines():
    """Every Unicode scalar value between ASCII letters, 64 per line."""
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return [" ".join(f"a{chr(c)}b" for c in code_points[i:i + 64])
            for i in range(0, len(code_points), 64)]


def identical(name, ids, reference, lines, show):
    """The number of lines whose ids equal the reference's; prints the first `show` others."""
    differing = [(line, a, b) for line, a, b in zip(lines, ids, reference, strict=True)
                 if a != b]
    for line, a, b in differing[:show]:
        print(f"{name}: {line!r}\n    ours: {a}\n    ref:  {b}", file=sys.stderr)
    return len(lines) - len(differing)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: all-MiniLM-L6-v2)")
    parser.add_argument("--corpus", default=common.TOKENIZER_CORPUS, help="JSON-lines corpus")
    parser.add_argument("--cased", action="store_true", help="cased tokenization")
    parser.add_argument("--litert", action="store_true",
                        help="also run the TFLite-compatible pipeline as a .tflite file")
    parser.add_argument("--all-code-points", action="store_true",
                        help="also compare every Unicode code point")
    parser.add_argument("--show", type=int, default=0, help="differing lines to print")
    parser.add_argument("--out")
    args = parser.parse_args()

    vocab = str(args.vocab or common.default_vocab())
    lower_case = not args.cased
    reference = BertWordPieceTokenizer(vocab, lowercase=lower_case)
    pipelines = {"reference_pipeline": tensorflow_pipeline(
        BertTokenizer(vocab, lower_case=lower_case))}
    tflite_tokenizer = BertTokenizer(vocab, lower_case=lower_case, tflite_compatible=True)
    pipelines["tflite_compatible"] = tensorflow_pipeline(tflite_tokenizer)
    if args.litert:
        pipelines["litert"] = litert_pipeline(tflite_tokenizer)
    texts = {"": common.load_corpus(args.corpus)}
    if args.all_code_points:
        texts["_every_code_point"] = all_code_point_lines()

    result = {"benchmark": "tokenizer_ids", "lines": len(texts[""])}
    if args.cased:
        result["lower_case"] = False
    for suffix, lines in texts.items():
        expected = [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
        for name, ids in pipelines.items():
            same = identical(name + suffix, ids(lines), expected, lines, args.show)
            result[f"{name}{suffix}_identical_lines"] = same
            result[f"{name}{suffix}_identical_fraction"] = same / len(lines)
    common.emit(result, args.out)


if __name__ == "__main__":
    main()
