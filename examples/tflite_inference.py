"""Export a classifier to TFLite, tokenizer inside, and run it in the LiteRT interpreter.

The `.tflite` file takes raw strings: tf.text's ByteSplit, FastWordpieceTokenize and
FastWordpieceDetokenize run inside it as custom ops, which an app registers from
tensorflow-text's TFLite registrar (`tflite_registrar.SELECT_TFTEXT_OPS` in Python; see
export/README.md for Android and iOS).
Each call is padded to its own longest text: a short text does not pay for seq_length.
The LiteRT interpreter comes with the litert extra (`pip install -e ".[litert]"`).

    python examples/tflite_inference.py
    python examples/tflite_inference.py --quantize dynamic   # int8 weights, ~4x smaller
    python examples/tflite_inference.py --smoke   # seconds, for tests
"""

import argparse
import os
import random
import tempfile
import time

import numpy as np
from ai_edge_litert.interpreter import InterpreterWithCustomOps
from tensorflow_text import tflite_registrar

import keras_bert_core as kbc
from keras_bert_core.export import export_tflite
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.text import BertPreprocessor

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "plot", "was",
         "great", "good", "superb", "bad", "awful", "dull", "."]
LABELS = ["negative", "positive"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(tempfile.gettempdir(),
                                                          "kbc_sentiment.tflite"))
    parser.add_argument("--quantize", choices=["dynamic", "float16"],
                        help="weight quantization (default: float32 weights)")
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()
    epochs = 1 if args.smoke else 10

    # A tiny trained classifier; any task model exports the same way.
    rng = random.Random(0)
    labels = np.array([rng.randint(0, 1) for _ in range(128)])
    texts = [f"the {rng.choice(['film', 'plot'])} was "
             f"{rng.choice(['great', 'good', 'superb'] if y else ['bad', 'awful', 'dull'])} ."
             for y in labels]
    preprocessor = BertPreprocessor(WORDS, seq_length=16)
    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(WORDS))),
                           num_classes=2)
    steps = epochs * len(texts) // 16
    model.compile(optimizer=create_optimizer(1e-3, steps, steps // 10))
    model.fit(preprocessor(texts), labels, batch_size=16, epochs=epochs, verbose=2)

    export_tflite(model, preprocessor, args.output, quantize=args.quantize,
                  label_names=LABELS)
    print(f"wrote {args.output}: {os.path.getsize(args.output) / 1e6:.2f} MB")

    # On the device: the interpreter, tf.text's ops registered, one text per call.
    interpreter = InterpreterWithCustomOps(
        model_path=args.output, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    classify = interpreter.get_signature_runner("serving_default")
    queries = ["the film was superb .", "the plot was awful ."]
    expected = model.predict(preprocessor(queries), verbose=0).argmax(-1)
    for query, keras_label in zip(queries, expected, strict=True):
        start = time.perf_counter()
        outputs = classify(text=np.array([query], dtype=object))
        milliseconds = 1000 * (time.perf_counter() - start)
        print(f"{query!r}: {outputs['label_name'][0].decode()} "
              f"{outputs['probabilities'][0].round(3)} in {milliseconds:.1f} ms "
              f"(Keras says {LABELS[keras_label]})")


if __name__ == "__main__":
    main()
