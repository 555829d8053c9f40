"""Raw-text classification, strings in, probabilities out: our exports vs KerasHub's pipeline.

    python bench/inference.py --framework ours        # our SavedModel
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

Prints one JSON line.
"""

import argparse
import os
import statistics
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

from keras_bert_core.cli.demo import median_latency_ms  # noqa: E402

SEQ_LENGTH = 128
BATCH = 32




def corpus(vocab, short_count, long_count):
    """`{"short": [...], "long": [...]}` texts and their mean wordpiece counts."""
    from tokenizers import BertWordPieceTokenizer

    from keras_bert_core.text import stdlib_corpus

    docs = stdlib_corpus.read_docstrings()
    firsts, wholes, seen = [], [], set()
    for doc in docs:
        sentences = stdlib_corpus.sentences(doc.text)
        if sentences and sentences[0] not in seen:
            seen.add(sentences[0])
            firsts.append(sentences[0])
            wholes.append(" ".join(sentences))
    counter = BertWordPieceTokenizer(vocab, lowercase=True)

    def pieces(texts):
        return [len(e.ids) - 2 for e in counter.encode_batch(texts)]

    # Every k-th text, so the sample spans the whole library, not its first package.
    short = firsts[:: max(1, len(firsts) // short_count)][:short_count]
    long_texts = [t for t, n in zip(wholes, pieces(wholes), strict=True) if n >= 120]
    long_texts = long_texts[:: max(1, len(long_texts) // long_count)][:long_count]
    return {"short": short, "long": long_texts}, {
        "short": statistics.fmean(pieces(short)), "long": statistics.fmean(pieces(long_texts))}


def batches(texts):
    return [texts[i:i + BATCH] for i in range(0, len(texts), BATCH)]


def throughput(run_pass, count, repeats):
    """Texts per second: the median time of `repeats` passes over `count` texts."""
    times = common.step_times(run_pass, warmup=1, steps=repeats)
    return count / statistics.median(times)


def measure_ours(texts, vocab, args):
    import tensorflow as tf

    import keras_bert_core as kbc
    from keras_bert_core.export import export_saved_model
    from keras_bert_core.models import BertClassifier
    from keras_bert_core.text import BertPreprocessor

    model = BertClassifier(kbc.BertEncoder(kbc.BertConfig.preset(
        "mini", vocab_size=common.VOCAB_SIZE, hidden_act="gelu_approximate")), num_classes=2)
    preprocessor = BertPreprocessor(vocab, seq_length=SEQ_LENGTH, lower_case=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        serving = tf.saved_model.load(export_saved_model(
            model, preprocessor, os.path.join(tmp, "saved_model"), warmup=False))
        predict = serving.signatures["serving_default"]
        for kind, sample in texts.items():
            tensors = [tf.constant(b) for b in batches(sample)]
            results[f"savedmodel_{kind}_texts_per_s"] = throughput(
                lambda tensors=tensors: [predict(text=t)["probabilities"].numpy()
                                         for t in tensors], len(sample), args.repeats)
            results[f"savedmodel_{kind}_latency_ms"] = median_latency_ms(
                lambda t: predict(text=tf.constant([t]))["probabilities"].numpy(),
                sample[:args.latency_texts])
    return results


def measure_keras_hub(texts, vocab, args):
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
    results = {}
    for kind, sample in texts.items():
        results[f"keras_hub_{kind}_texts_per_s"] = throughput(
            lambda sample=sample: model.predict(sample, batch_size=BATCH, verbose=0),
            len(sample), args.repeats)
        results[f"keras_hub_{kind}_latency_ms"] = median_latency_ms(
            lambda t: model.predict_on_batch([t]), sample[:args.latency_texts])
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("ours", "keras_hub"), required=True)
    parser.add_argument("--vocab", default=None, help="uncased BERT vocab.txt")
    parser.add_argument("--short-texts", type=int, default=512)
    parser.add_argument("--long-texts", type=int, default=128)
    parser.add_argument("--latency-texts", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()

    import tensorflow as tf

    vocab = args.vocab or common.default_vocab()
    texts, wordpieces = corpus(vocab, args.short_texts, args.long_texts)
    measure = measure_ours if args.framework == "ours" else measure_keras_hub
    common.emit({"benchmark": "inference", "framework": args.framework, "preset": "mini",
                 "seq_length": SEQ_LENGTH, "batch": BATCH,
                 "texts": {kind: len(sample) for kind, sample in texts.items()},
                 "mean_wordpieces": wordpieces, **measure(texts, vocab, args),
                 "tensorflow": tf.__version__}, args.out)


if __name__ == "__main__":
    main()
