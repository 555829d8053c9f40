"""Raw-text classification, strings in, probabilities out: our exports vs KerasHub's pipeline.

    python bench/inference.py                         # both, taking turns
    python bench/inference.py --framework ours        # our SavedModel alone
    python bench/inference.py --framework keras_hub   # BertTextClassifier + its preprocessor

Both classify with a "mini" BERT (random weights: speed does not depend on them) and the
same uncased 30522-word vocabulary, truncating at 128 wordpieces. Texts are real English:
the first sentences of the Python standard library's docstrings ("short") and whole
docstrings of 120 wordpieces or more ("long"). Figures:

- throughput, texts/s, batches of 32: ours calls the SavedModel's `serving_default`
  signature batch by batch (it pads each batch to its longest text); KerasHub runs
  `model.predict(texts, batch_size=32)` (its preprocessor pads to `sequence_length` 128);
- latency of one text: the signature called on one string; KerasHub's
  `predict_on_batch([text])`. (TFLite latency: bench/export_latency.py.)

Both pipelines run in this one process and take turns (a pass over the texts each, then one
text each), so that a change in the shared machine's speed reaches them alike. Prints one
JSON line, with each framework's figures under `frameworks`.
"""

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

SEQ_LENGTH = 128
BATCH = 32


def ours(vocab, directory):
    """Our SavedModel's signature: `(pass_over(texts) -> a pass over them, classify(text))`."""
    import tensorflow as tf

    import keras_bert_core as kbc
    from keras_bert_core.export import export_saved_model
    from keras_bert_core.models import BertClassifier
    from keras_bert_core.text import BertPreprocessor

    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
        "mini", vocab_size=common.VOCAB_SIZE, hidden_act="gelu_approximate")), num_classes=2)
    preprocessor = BertPreprocessor(vocab, seq_length=SEQ_LENGTH, lower_case=True)
    serving = tf.saved_model.load(export_saved_model(
        model, preprocessor, os.path.join(directory, "saved_model"), warmup=False))
    predict = serving.signatures["serving_default"]

    def pass_over(texts):
        tensors = [tf.constant(batch) for batch in common.batches(texts, BATCH)]
        return lambda: [predict(text=t)["probabilities"].numpy() for t in tensors]

    return pass_over, lambda text: predict(text=tf.constant([text]))["probabilities"].numpy()


def keras_hub(vocab, directory):
    """KerasHub's classifier with its preprocessor, as `ours` gives ours."""
    import keras_hub

    size = common.PRESETS["mini"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer, sequence_length=SEQ_LENGTH)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE, num_layers=size["num_layers"],
        num_heads=size["num_heads"], hidden_dim=size["hidden_size"],
        intermediate_dim=size["intermediate_size"])
    # Probabilities out, as our signature gives them.
    model = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=preprocessor, activation="softmax")

    def pass_over(texts):
        return lambda: model.predict(texts, batch_size=BATCH, verbose=0)

    return pass_over, lambda text: model.predict_on_batch([text])


PIPELINES = {"ours": (ours, "savedmodel"), "keras_hub": (keras_hub, "keras_hub")}


def measure(frameworks, texts, vocab, args):
    """`{framework: figures}`, the frameworks' pipelines taking turns."""
    figures = {name: {} for name in frameworks}
    with tempfile.TemporaryDirectory() as directory:
        pipelines = {name: PIPELINES[name][0](vocab, directory) for name in frameworks}
        for kind, sample in texts.items():
            runs = {name: pass_over(sample) for name, (pass_over, _) in pipelines.items()}
            seconds = common.median_seconds_in_turns(
                {name: lambda _, run=run: run() for name, run in runs.items()},
                range(args.repeats))
            latency = common.median_seconds_in_turns(
                {name: classify for name, (_, classify) in pipelines.items()},
                sample[:args.latency_texts])
            for name in frameworks:
                key = PIPELINES[name][1]
                figures[name][f"{key}_{kind}_texts_per_s"] = len(sample) / seconds[name]
                figures[name][f"{key}_{kind}_latency_ms"] = 1000 * latency[name]
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(PIPELINES),
                        help="measure this one alone (default: both, taking turns)")
    parser.add_argument("--vocab", default=None, help="uncased BERT vocab.txt")
    parser.add_argument("--short-texts", type=int, default=512)
    parser.add_argument("--long-texts", type=int, default=128)
    parser.add_argument("--latency-texts", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()

    import tensorflow as tf

    vocab = args.vocab or common.default_vocab()
    texts, wordpieces = common.stdlib_texts(vocab, args.short_texts, args.long_texts)
    frameworks = [args.framework] if args.framework else list(PIPELINES)
    common.emit({"benchmark": "inference", "preset": "mini",
                 "seq_length": SEQ_LENGTH, "batch": BATCH,
                 "texts": {kind: len(sample) for kind, sample in texts.items()},
                 "mean_wordpieces": wordpieces,
                 "frameworks": measure(frameworks, texts, vocab, args),
                 "tensorflow": tf.__version__}, args.out)


if __name__ == "__main__":
    main()
