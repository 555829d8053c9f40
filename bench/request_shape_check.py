"""What the SavedModel's request-shape check costs a call.

    python bench/request_shape_check.py --rounds 3

`export_saved_model` refuses requests whose inputs disagree in rows or width
(`export.limits.check_request_shapes`): TF Serving does not check a signature's shapes. For
a one-text model there is nothing to compare; a pairs model compares the row counts of
`text_a` and `text_b`. This exports a "mini" pairs classifier (seq_length 128) twice, with
the check and with it replaced by the identity, and times `serving_default` one pair per
call (20-word texts) on each, taking turns (who goes first alternates). Run it in two
processes and compare the best rounds. Prints milliseconds per call.
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_bert_core as kbc  # noqa: E402
from keras_bert_core.export import saved_model  # noqa: E402
from keras_bert_core.models.classifier import BertClassifier  # noqa: E402
from keras_bert_core.text.preprocessor import BertPreprocessor  # noqa: E402


def exports(model, preprocessor):
    """`{"checked": signature, "unchecked": signature}` of the same model."""
    signatures = {}
    check = saved_model.check_request_shapes
    for name in ("checked", "unchecked"):
        saved_model.check_request_shapes = check if name == "checked" else (lambda x: x)
        try:
            path = saved_model.export_saved_model(
                model, preprocessor, os.path.join(tempfile.mkdtemp(), name), pairs=True,
                warmup=False)
        finally:
            saved_model.check_request_shapes = check
        signatures[name] = tf.saved_model.load(path).signatures["serving_default"]
    return signatures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(200)]
    preprocessor = BertPreprocessor(vocab, seq_length=128)
    keras.utils.set_random_seed(0)
    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset("mini", vocab_size=len(vocab))),
                           num_classes=2)
    signatures = exports(model, preprocessor)
    rng = np.random.default_rng(0)
    texts = [" ".join(f"w{i}" for i in rng.integers(0, 200, 20)) for _ in range(args.calls)]
    for number in range(args.rounds):
        for name in sorted(signatures, reverse=number % 2 == 1):  # who goes first alternates
            signature = signatures[name]
            signature(text_a=tf.constant(texts[:1]), text_b=tf.constant(texts[1:2]))
            start = time.perf_counter()
            for a, b in zip(texts, texts[1:] + texts[:1], strict=True):
                signature(text_a=tf.constant([a]), text_b=tf.constant([b]))
            per_call = (time.perf_counter() - start) / len(texts) * 1e3
            print(f"round {number} {name}: {per_call:.3f} ms per call", flush=True)


if __name__ == "__main__":
    main()
