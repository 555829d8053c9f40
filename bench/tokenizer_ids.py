"""Identical ids: our BertTokenizer (both pipelines) against Hugging Face `tokenizers`.

    python bench/tokenizer_ids.py [--vocab vocab.txt]

The same corpus and vocabulary as bench/tokenizer_throughput.py, so its speed figures
compare tokenizers that agree. A line counts when its whole id sequence equals the
reference's. Prints one JSON line.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default=None)
    parser.add_argument("--out")
    args = parser.parse_args()

    import tensorflow as tf
    from tokenizers import BertWordPieceTokenizer

    from keras_bert_core.text import BertTokenizer

    vocab = str(args.vocab or common.default_vocab())
    lines = common.load_corpus()
    reference = [e.ids for e in BertWordPieceTokenizer(vocab, lowercase=True).encode_batch(
        lines, add_special_tokens=False)]
    result = {"benchmark": "tokenizer_ids", "lines": len(lines)}
    for name, tflite_compatible in (("reference_pipeline", False), ("tflite_compatible", True)):
        tokenize = tf.function(BertTokenizer(vocab, tflite_compatible=tflite_compatible).call)
        ours = [row for i in range(0, len(lines), 512)
                for row in tokenize(tf.constant(lines[i:i + 512])).to_list()]
        same = sum(a == b for a, b in zip(ours, reference, strict=True))
        result[f"{name}_identical_lines"] = same
        result[f"{name}_identical_fraction"] = same / len(lines)
    common.emit(result, args.out)


if __name__ == "__main__":
    main()
