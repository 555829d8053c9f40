"""Pretrain a small BERT (masked LM + next sentence) from raw text, with the Python API.

The corpus is the docstrings of a few standard-library packages (every Python has them):
written one sentence a line, a blank line between documents, as google-research's
`create_pretraining_data.py` reads text. The script learns a WordPiece vocabulary, streams
masked sentence pairs with `tf.data`, trains with `model.fit` into a resumable run folder
(run it again to continue from the last backup) and saves the encoder for fine-tuning.

    python examples/pretrain_from_text.py --output /tmp/pretrain_example
    python examples/pretrain_from_text.py --smoke   # seconds, for tests
"""

import argparse
import os
import tempfile

import keras_bert_core as kbc
from keras_bert_core.cli.demo_corpus import (
    read_docstrings,
    stdlib_root,
    write_pretraining_corpus,
)
from keras_bert_core.models.pretrainer import BertPretrainer
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.pretraining.data import pretraining_dataset
from keras_bert_core.text import BertTokenizer
from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab
from keras_bert_core.training import fit_resumable, training_callbacks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(tempfile.gettempdir(), "kbc_pretrain"))
    parser.add_argument("--smoke", action="store_true", help="a few steps on a tiny corpus")
    args = parser.parse_args()
    packages = ["json"] if args.smoke else ["email", "json", "http", "logging", "asyncio"]
    epochs, steps_per_epoch = (2, 3) if args.smoke else (10, 100)
    seq_length, batch_size = 64, 16
    os.makedirs(args.output, exist_ok=True)

    # 1. Text: one sentence a line, a blank line between documents.
    corpus = os.path.join(args.output, "corpus.txt")
    docstrings = [d for p in packages for d in read_docstrings(stdlib_root() / p)]
    print(f"{write_pretraining_corpus(docstrings, corpus)} documents in {corpus}")

    # 2. A WordPiece vocabulary learned from it.
    vocab = learn_wordpiece_vocab(corpus, vocab_size=2000 if args.smoke else 8000,
                                  output_file=os.path.join(args.output, "vocab.txt"))
    tokenizer = BertTokenizer(vocab, lower_case=True)

    # 3. Masked sentence pairs, masks drawn afresh every batch; static shapes for fit.
    dataset = pretraining_dataset(corpus, tokenizer, seq_length=seq_length,
                                  max_predictions_per_seq=10, batch_size=batch_size, seed=1)

    # 4. The model, BERT's optimizer (warmup, linear decay), and model.fit.
    config = kbc.BertConfig.preset("tiny", vocab_size=len(vocab),
                                   max_position_embeddings=seq_length)
    pretrainer = BertPretrainer(kbc.BertEncoder(config))
    total_steps = epochs * steps_per_epoch
    pretrainer.compile(optimizer=create_optimizer(5e-4, total_steps, total_steps // 10))
    run_dir = os.path.join(args.output, "run")
    # A rerun resumes from the newest backup, past the batches it already trained on.
    history = fit_resumable(pretrainer, dataset, run_dir, epochs=epochs,
                            steps_per_epoch=steps_per_epoch, verbose=2,
                            callbacks=training_callbacks(run_dir, log_every_steps=10))

    # 5. The encoder, for fine-tuning (kbc.load_checkpoint reads it back).
    path = os.path.join(args.output, "encoder.keras")
    pretrainer.encoder.save(path)
    encoder, _ = kbc.load_checkpoint(path)
    if history:  # None when an earlier run had already finished
        print(f"masked-LM accuracy {history.history['mlm_accuracy'][-1]:.3f}")
    print(f"saved {encoder.count_params():,} encoder weights to {path}")


if __name__ == "__main__":
    main()
