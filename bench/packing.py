"""Sequence packing vs padding for masked-LM pretraining on a corpus of short documents.

    python bench/packing.py [--preset mini] [--batch 32] [--seq 128] [--steps 6]

Documents are the prose sentences of the Python standard library's docstrings (a few to
a few dozen wordpieces each: a length-skewed corpus), tokenized by `BertPreprocessor`
as `[CLS] sentence [SEP]`. The same `BertPretrainer(next_sentence=False)` (masked LM only)
trains on them two ways, masked by the same `MaskedLMMasker` (20 predictions per row):

- padded: one document per row, padded to `seq`;
- packed: `pretraining.packing.packed_dataset`, greedy first fit, document ids in
  `padding_mask`.

Reported: step time, non-padding tokens/s and their ratio; and the loss check: the first
packed batch's masked-LM loss, then the loss of the same documents, same masks, same
weights, each document in a row of its own. Prints one JSON line.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def documents(preprocessor, limit):
    """Id arrays `[CLS] sentence [SEP]` of the first `limit` docstring sentences."""
    from keras_bert_core.cli import demo_corpus

    sentences = [s for doc in demo_corpus.read_docstrings()
                 for s in demo_corpus.sentences(doc.text)][:limit]
    docs = []
    for i in range(0, len(sentences), 1024):
        out = preprocessor(sentences[i:i + 1024], static_shape=False)
        ids, mask = out["token_ids"].numpy(), out["padding_mask"].numpy()
        docs.extend(row[:n] for row, n in zip(ids, mask.sum(axis=1), strict=True))
    return docs


def padded_dataset(docs, seq, batch, masker, seed):
    """One document per row, as a padding pipeline feeds it, masked like the packed rows."""
    import numpy as np
    import tensorflow as tf

    ids = np.zeros((len(docs), seq), "int32")
    for row, doc in zip(ids, docs, strict=True):
        row[:len(doc)] = doc
    rows = tf.data.Dataset.from_tensor_slices(
        {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids > 0).astype("int32")})

    def arrange(x, mask_seed):
        masked = masker(x["token_ids"], x["padding_mask"], seed=mask_seed)
        return ({**x, "token_ids": masked["token_ids"],
                 "masked_positions": masked["masked_positions"]},
                {"mlm": masked["masked_ids"]}, {"mlm": masked["masked_weights"]})

    seeds = tf.data.Dataset.random(seed=seed).batch(2)
    return tf.data.Dataset.zip(rows.batch(batch, drop_remainder=True), seeds).map(arrange)


def materialize(dataset, count):
    """The first `count` batches, held in memory: the timing sees the model, not the input."""
    import tensorflow as tf

    batches = list(dataset.take(count))
    if len(batches) < count:
        raise SystemExit(f"the corpus gives only {len(batches)} batches; lower --steps")
    return tf.data.Dataset.from_tensor_slices(
        tf.nest.map_structure(lambda *t: tf.stack(t), *batches))


def time_fit(model, batches, warmup):
    """Seconds of each step after `warmup`, and the real (non-padding) tokens they saw."""
    import time

    import keras
    import numpy as np

    ends = []
    clock = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: ends.append(time.perf_counter()))
    model.fit(batches, epochs=1, callbacks=[clock], verbose=0)
    real = [int(np.count_nonzero(x["padding_mask"])) for x, _, _ in batches]
    return np.diff(ends[warmup - 1:]), sum(real[warmup:])


def unpacked(x, y, w, seq):
    """The packed batch's documents one per row, with their masks, targets and weights."""
    import numpy as np

    rows = {"token_ids": [], "masked_positions": [], "mlm": [], "weights": []}
    slots = x["masked_positions"].shape[1]
    for b in range(x["token_ids"].shape[0]):
        docs = x["padding_mask"][b]
        for d in range(1, docs.max() + 1):
            where = np.flatnonzero(docs == d)
            start, end = where[0], where[-1] + 1
            ids = np.zeros(seq, "int32")
            ids[:end - start] = x["token_ids"][b, start:end]
            mine = (w[b] > 0) & (x["masked_positions"][b] >= start) & (
                x["masked_positions"][b] < end)
            positions, targets, weights = (np.zeros(slots, t) for t in ("int32", "int32",
                                                                        "float32"))
            count = int(mine.sum())
            positions[:count] = x["masked_positions"][b][mine] - start
            targets[:count] = y[b][mine]
            weights[:count] = 1.0
            for key, value in zip(rows, (ids, positions, targets, weights), strict=True):
                rows[key].append(value)
    return {key: np.stack(value) for key, value in rows.items()}


def mlm_loss(model, token_ids, padding_mask, positions, targets, weights):
    import numpy as np
    import tensorflow as tf

    logits = model({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                    "padding_mask": padding_mask, "masked_positions": positions},
                   training=False)["mlm"]
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
    return float(tf.reduce_sum(losses * weights) / tf.reduce_sum(weights))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(common.PRESETS), default="mini")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--vocab", default=None)
    parser.add_argument("--out")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    import keras_bert_core as kbc
    from keras_bert_core.models import BertPretrainer
    from keras_bert_core.pretraining.masking import MaskedLMMasker
    from keras_bert_core.pretraining.packing import packed_dataset
    from keras_bert_core.text import BertPreprocessor

    vocab = args.vocab or common.default_vocab()
    preprocessor = BertPreprocessor(vocab, seq_length=args.seq, lower_case=True)
    count = args.warmup + args.steps
    docs = documents(preprocessor, limit=40 * args.batch * count)
    masker = MaskedLMMasker(vocab, max_predictions_per_seq=common.MAX_PREDICTIONS)
    config = kbc.BertConfig.preset(args.preset, vocab_size=common.VOCAB_SIZE,
                                   hidden_act="gelu_approximate")
    model = BertPretrainer(kbc.BertEncoder(config), next_sentence=False)
    packed = materialize(packed_dataset(docs, args.seq, args.batch, masker, seed=1), count)
    padded = materialize(padded_dataset(docs, args.seq, args.batch, masker, seed=1), count)

    x, y, w = (tf.nest.map_structure(lambda t: t.numpy(), part) for part in next(iter(packed)))
    packed_loss = mlm_loss(model, x["token_ids"], x["padding_mask"], x["masked_positions"],
                           y["mlm"], w["mlm"])
    rows = unpacked(x, y["mlm"], w["mlm"], args.seq)
    separate_loss = mlm_loss(model, rows["token_ids"], (rows["token_ids"] > 0).astype("int32"),
                             rows["masked_positions"], rows["mlm"], rows["weights"])

    result = {"benchmark": "packing", "preset": args.preset, "batch": args.batch,
              "seq": args.seq, "documents": len(docs),
              "mean_document_tokens": float(np.mean([len(d) for d in docs])),
              "documents_in_first_packed_batch": len(rows["token_ids"]),
              "mlm_loss_packed": packed_loss, "mlm_loss_separate_rows": separate_loss,
              "mlm_loss_relative_difference": abs(packed_loss - separate_loss) / separate_loss}
    for name, batches in (("padded", padded), ("packed", packed)):
        times, real_tokens = time_fit(model, batches, args.warmup)
        result[f"{name}_step_s"] = float(np.median(times))
        result[f"{name}_real_tokens_per_s"] = real_tokens / float(np.sum(times))
        result[f"{name}_token_utilization"] = real_tokens / (len(times) * args.batch * args.seq)
    result["packed_vs_padded_real_tokens_per_s"] = (
        result["packed_real_tokens_per_s"] / result["padded_real_tokens_per_s"])
    common.emit({**result, "tensorflow": tf.__version__}, args.out)


if __name__ == "__main__":
    main()
