"""Long texts in both exports: one raw text of N words in, one answer out (issue 35).

    python bench/long_texts.py                               # mini, seq 512, 3 rounds
    python bench/long_texts.py --preset small --rounds 5 --words 2000 8000

A windowed classifier (`kbc.LongTextPreprocessor`, `BertClassifier(window_aggregation=
"mean")`, random weights of `--preset`: the time does not depend on them) is exported as a
SavedModel and a float32 `.tflite` file, each taking one raw text and answering its
class; the windows are made, run and joined inside each graph. A windowed tagger
(`BertTokenClassifier`, 9 tags, on the same encoder) answers each word's tag from its
most central window, timed alike (`--no-tagger` leaves it out). Texts: real English (the
tokenizer corpus's lines joined) cut to N words, tokenized by the uncased BERT vocabulary
(`common.default_vocab`). For each length, the CPU time of one text per call (this
process's, all threads: on a loaded machine other programs delay a call but do not add
to its CPU time), the SavedModel and the `.tflite` file taking turns, text after text
(`common.medians_in_turns`), median over `--rounds` texts; TensorFlow and LiteRT with 2
threads each. Also a short text (20 words) through the windowed exports and through the
plain ones (`BertPreprocessor`, `BertClassifier` without windows): what windows cost a
text that fits one window. Writes bench/results/long_texts.json; prints a Markdown table.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import (  # noqa: E402
    RESULTS_DIR,
    default_vocab,
    emit,
    load_corpus,
    machine_info,
    medians_in_turns,
)

THREADS = 2


def cpu_timed(call):
    """`call` (of one argument) made to return the CPU seconds the process spent in it."""
    def run(argument):
        start = time.process_time()
        call(argument)
        return time.process_time() - start
    return run


def text_of(words, corpus, offset=0):
    """`words` words of real English, from the corpus's lines joined, starting at line
    `offset` (each round reads other text)."""
    chosen = []
    for line in corpus[offset:] + corpus[:offset]:
        chosen.extend(line.split())
        if len(chosen) >= words:
            break
    return " ".join(chosen[:words])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--seq-length", type=int, default=512)
    parser.add_argument("--stride", type=int, default=256)
    parser.add_argument("--max-windows", type=int, default=64)
    parser.add_argument("--words", type=int, nargs="+",
                        default=[250, 500, 1000, 2000, 4000, 8000])
    parser.add_argument("--rounds", type=int, default=3, help="texts per length")
    parser.add_argument("--no-tagger", action="store_true",
                        help="time the classifier only (not also a windowed tagger)")
    parser.add_argument("--vocab", help="an uncased BERT vocab.txt (default: MiniLM's)")
    parser.add_argument("--out", default=os.path.join(RESULTS_DIR, "long_texts.json"))
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf
    from ai_edge_litert import interpreter as litert
    from tensorflow_text import tflite_registrar

    import keras_bert_core as kbc

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    vocab = args.vocab or default_vocab()
    max_text_bytes = 16 * max(args.words)  # every text whole
    windowed = kbc.LongTextPreprocessor(vocab, seq_length=args.seq_length, stride=args.stride,
                                        max_windows=args.max_windows)
    plain = kbc.BertPreprocessor(vocab, seq_length=args.seq_length)
    config = kbc.BertConfig.preset(args.preset, vocab_size=len(plain.vocabulary),
                                   max_position_embeddings=args.seq_length)
    encoder = kbc.BertEncoder(config)
    models = {"windows": (kbc.BertClassifier(encoder, 2, window_aggregation="mean"), windowed),
              "plain": (kbc.BertClassifier(encoder, 2), plain),
              "tagger": (kbc.BertTokenClassifier(encoder, 9), windowed)}
    if args.no_tagger:
        del models["tagger"]
    folder = tempfile.mkdtemp()
    calls = {}
    for name, (model, preprocessor) in models.items():
        path = kbc.export_saved_model(model, preprocessor, os.path.join(folder, name),
                                      max_text_bytes=max_text_bytes, warmup=False)
        serve = tf.saved_model.load(path).signatures["serving_default"]
        calls[f"{name} SavedModel"] = lambda text, serve=serve: serve(
            text=tf.constant([text]))["logits"].numpy()
        tflite = kbc.export_tflite(model, preprocessor, os.path.join(folder, f"{name}.tflite"),
                                   max_text_bytes=max_text_bytes)
        runner = litert.InterpreterWithCustomOps(
            model_path=tflite, custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
            num_threads=THREADS).get_signature_runner("serving_default")
        calls[f"{name} .tflite"] = lambda text, runner=runner: runner(
            text=np.array([text], dtype=object))["logits"]

    corpus = load_corpus()
    rows = []
    for words in [20, *args.words]:
        texts = [text_of(words, corpus, offset=37 * index) for index in range(args.rounds)]
        pieces = [len(plain.tokenizer([text]).flat_values) for text in texts]
        windows = [int((windowed([text])["padding_mask"].numpy()[0, :, 0] > 0).sum())
                   for text in texts]
        names = [name for name in calls if words == 20 or not name.startswith("plain")]
        cpu = medians_in_turns({name: cpu_timed(calls[name]) for name in names}, texts)
        row = {"words": words, "wordpieces": int(np.median(pieces)),
               "windows": int(np.median(windows)),
               **{f"{name} cpu_s": round(seconds, 4) for name, seconds in cpu.items()}}
        rows.append(row)
        print(row, flush=True)

    print(f"\n{args.preset}, seq_length {args.seq_length}, stride {args.stride}: CPU s per "
          f"text, median of {args.rounds} texts")
    print("| words | wordpieces | windows | SavedModel | .tflite | tagger SavedModel | "
          "tagger .tflite | plain SavedModel | plain .tflite |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        cells = [f"{row[key]:.3f}" if key in row else "–" for key in (
            "windows SavedModel cpu_s", "windows .tflite cpu_s", "tagger SavedModel cpu_s",
            "tagger .tflite cpu_s", "plain SavedModel cpu_s", "plain .tflite cpu_s")]
        print(f"| {row['words']:,} | {row['wordpieces']:,} | {row['windows']} | "
              f"{' | '.join(cells)} |")
    emit({"benchmark": "long_texts", "preset": args.preset, "seq_length": args.seq_length,
          "stride": args.stride, "rounds": args.rounds, "threads": THREADS,
          "machine": machine_info(), "rows": rows}, args.out)


if __name__ == "__main__":
    main()
