"""Export a classifier as a SavedModel that takes raw text, load it back and serve it.

The WordPiece tokenizer is inside the graph and the vocabulary travels as an asset, so TF
Serving (or any TensorFlow program) sends strings, not ids. The export holds three
signatures: `serving_default` (text in, probabilities and label out), `predict_ids` (ids
in) and `tokenize` (text in, ids out). Serve it with TF Serving:

    docker run -p 8501:8501 -v /tmp/kbc_export/models:/models -e MODEL_NAME=sentiment \\
        tensorflow/serving
    curl -d '{"inputs": {"text": ["The plot was dull."]}}' \\
        localhost:8501/v1/models/sentiment:predict

    python examples/export_and_serve.py
    python examples/export_and_serve.py --smoke   # seconds, for tests
"""

import argparse
import os
import random
import shutil
import tempfile

import numpy as np
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.export import export_saved_model
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.text import BertPreprocessor

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "plot", "was",
         "great", "good", "superb", "bad", "awful", "dull", "."]
LABELS = ["negative", "positive"]


def train_toy_classifier(preprocessor, epochs):
    """A tiny sentiment classifier; any trained task model exports the same way."""
    rng = random.Random(0)
    labels = np.array([rng.randint(0, 1) for _ in range(128)])
    texts = [f"the {rng.choice(['film', 'plot'])} was "
             f"{rng.choice(['great', 'good', 'superb'] if y else ['bad', 'awful', 'dull'])} ."
             for y in labels]
    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(WORDS))),
                           num_classes=2)
    steps = epochs * len(texts) // 16
    model.compile(optimizer=create_optimizer(1e-3, steps, steps // 10))
    model.fit(preprocessor(texts), labels, batch_size=16, epochs=epochs, verbose=2)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(tempfile.gettempdir(), "kbc_export"))
    parser.add_argument("--smoke", action="store_true", help="one epoch")
    args = parser.parse_args()
    preprocessor = BertPreprocessor(WORDS, seq_length=32)
    model = train_toy_classifier(preprocessor, epochs=1 if args.smoke else 10)

    # TF Serving's layout: <base>/<model name>/<version>/.
    shutil.rmtree(args.output, ignore_errors=True)
    path = export_saved_model(model, preprocessor, os.path.join(args.output, "models"),
                              name="sentiment", label_names=LABELS)
    print(f"exported {path}: {sorted(os.listdir(path))}")

    # Any TensorFlow program can load it: no keras_bert_core and no vocab file needed.
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    texts = ["the film was superb .", "the plot was dull ."]
    outputs = serve(text=tf.constant(texts))
    for text, name, p in zip(texts, outputs["label_name"].numpy(),
                             outputs["probabilities"].numpy(), strict=True):
        print(f"{text!r}: {name.decode()} {p.round(3)}")
    # The same answers as the Keras model, which was given the same text.
    expected = tf.nn.softmax(model.predict(preprocessor(texts), verbose=0)).numpy()
    print(f"max |SavedModel - Keras| = {np.abs(outputs['probabilities'] - expected).max():.1e}")
    print("ids the tokenizer signature makes:",
          loaded.signatures["tokenize"](text=tf.constant(texts[:1]))["token_ids"].numpy())


if __name__ == "__main__":
    main()
