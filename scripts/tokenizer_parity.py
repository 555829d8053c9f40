"""Identical-id rate of BertTokenizer against Hugging Face `tokenizers` (the reference).

Measures both pipelines on the tokenizer corpus (tests/text/data/tokenizer_corpus.jsonl):
the default TensorFlow pipeline, and the TFLite-compatible pipeline converted to a .tflite
string->ids model and run in the LiteRT interpreter. A line counts as identical when its
whole id sequence equals the reference's.

    python scripts/tokenizer_parity.py [--vocab vocab.txt] [--cased] [--all-code-points]
"""

import argparse
import pathlib
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from ai_edge_litert.interpreter import InterpreterWithCustomOps
from tokenizers import BertWordPieceTokenizer

from keras_bert_core.text import BertTokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
import common  # noqa: E402  (bench/common.py: vocab and corpus shared with the benchmark)


def tf_ids(tokenizer, lines, batch_size=512):
    tokenize = tf.function(tokenizer.call)
    ids = []
    for i in range(0, len(lines), batch_size):
        ids.extend(tokenize(tf.constant(lines[i : i + batch_size])).to_list())
    return ids


def tflite_ids(tokenizer, lines, batch_size=512):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(text):
        ids = tokenizer(text)
        return {"ids": ids.flat_values, "row_splits": ids.row_splits}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [tokenize.get_concrete_function()], tokenizer
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    interpreter = InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=converter.convert(),
    )
    run = interpreter.get_signature_runner()
    ids = []
    for i in range(0, len(lines), batch_size):
        out = run(text=np.array(lines[i : i + batch_size], dtype=object))
        splits = out["row_splits"]
        ids.extend(out["ids"][a:b].tolist() for a, b in zip(splits[:-1], splits[1:], strict=True))
    return ids


def all_code_point_lines():
    """Every Unicode scalar value between ASCII letters, 64 per line."""
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return [
        " ".join(f"a{chr(c)}b" for c in code_points[i : i + 64])
        for i in range(0, len(code_points), 64)
    ]


def report(name, ids, reference, lines, show):
    same = [a == b for a, b in zip(ids, reference, strict=True)]
    print(f"{name}: {sum(same)}/{len(lines)} lines identical ({100 * np.mean(same):.2f}%)")
    for line, a, b, ok in zip(lines, ids, reference, same, strict=True):
        if not ok and show > 0:
            show -= 1
            print(f"  {line!r}\n    ours: {a}\n    ref:  {b}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: all-MiniLM-L6-v2)")
    parser.add_argument("--corpus", default=common.TOKENIZER_CORPUS, help="JSON-lines corpus")
    parser.add_argument("--cased", action="store_true", help="cased tokenization")
    parser.add_argument("--all-code-points", action="store_true",
                        help="also compare every Unicode code point (TF pipeline)")
    parser.add_argument("--show", type=int, default=3, help="differing lines to print")
    args = parser.parse_args()

    vocab = str(args.vocab or common.default_vocab())
    lower_case = not args.cased
    reference = BertWordPieceTokenizer(vocab, lowercase=lower_case)
    lines = common.load_corpus(args.corpus)
    expected = [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
    print(f"corpus: {len(lines)} lines, {sum(len(s.encode()) for s in lines)} bytes; "
          f"vocab: {vocab}; lower_case={lower_case}")
    tokenizer = BertTokenizer(vocab, lower_case=lower_case)
    report("TF pipeline", tf_ids(tokenizer, lines), expected, lines, args.show)
    tflite_tokenizer = BertTokenizer(vocab, lower_case=lower_case, tflite_compatible=True)
    report("TFLite pipeline (LiteRT)", tflite_ids(tflite_tokenizer, lines), expected, lines,
           args.show)
    if args.all_code_points:
        lines = all_code_point_lines()
        expected = [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
        report("TF pipeline, every code point", tf_ids(tokenizer, lines), expected, lines,
               args.show)
        report("TFLite pipeline, every code point", tflite_ids(tflite_tokenizer, lines),
               expected, lines, 0)


if __name__ == "__main__":
    main()
