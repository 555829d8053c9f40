"""Does ELECTRA's discriminator learn? Replaced-token detection on counting sentences.

    python bench/electra_detection_probe.py                      # the generator's samples
    python bench/electra_detection_probe.py --replacements random

Pretrains a tiny `ElectraPretrainer` (64 wide, 2 layers, no dropout) on the counting corpus
of tests/models/test_convergence.py, where a wrong number word stands out from its
neighbours, then scores the discriminator on fresh batches: the AUC of its logits between
replaced and original real tokens (0.5: no signal), the mean probability it gives each, and
the loss of always answering "original". `--replacements random` puts uniformly random
words where the generator's samples would go (the sampler alone changes): what the
discriminator learns when replacements are easy, to tell a broken detection path from hard
negatives. Figures: bench/RESULTS.md.
"""

import argparse
import pathlib
import sys
import tempfile

import keras
import numpy as np
from keras import ops

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import keras_bert_core as kbc  # noqa: E402
from keras_bert_core.layers import replaced_tokens  # noqa: E402
from keras_bert_core.models import ElectraPretrainer  # noqa: E402
from keras_bert_core.pretraining import pretraining_dataset  # noqa: E402
from keras_bert_core.text import BertTokenizer  # noqa: E402
from keras_bert_core.text.vocabulary.wordpiece_vocabulary import SPECIAL_TOKENS  # noqa: E402
from tests.models.test_convergence import NUMBER_WORDS, TENS, write_counting_corpus  # noqa: E402

ORIGINAL_CALL = replaced_tokens.ReplacedTokenSampler.call


def random_replacements(sampler, mlm_logits, token_ids, masked_positions, masked_ids,
                        masked_weights):
    """`ReplacedTokenSampler.call` with uniformly random non-special words for samples: the
    original call on logits that pick them with certainty."""
    sampled = keras.random.randint(ops.shape(mlm_logits)[:2], len(SPECIAL_TOKENS),
                                   ops.shape(mlm_logits)[-1], seed=sampler.seed_generator,
                                   dtype="int32")
    logits = ops.log(ops.one_hot(sampled, ops.shape(mlm_logits)[-1]) + 1e-9)
    return ORIGINAL_CALL(sampler, logits * 1e3, token_ids, masked_positions, masked_ids,
                         masked_weights)



def auc(scores, labels):
    """Probability that a positive outscores a negative (ranks, no ties expected)."""
    ranks = np.empty(len(scores))
    ranks[np.argsort(scores)] = np.arange(len(scores))
    positive = labels == 1
    return (ranks[positive].mean() - (positive.sum() - 1) / 2) / (~positive).sum()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replacements", choices=["generator", "random"], default="generator")
    parser.add_argument("--generator-size", type=float, default=0.5)
    parser.add_argument("--rtd-weight", type=float, default=50.0)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--epochs", type=int, default=12, help="of 50 steps, batch 32")
    args = parser.parse_args()
    if args.replacements == "random":
        replaced_tokens.ReplacedTokenSampler.call = random_replacements

    keras.utils.set_random_seed(0)
    corpus = pathlib.Path(tempfile.mkdtemp()) / "counting.txt"
    write_counting_corpus(corpus, 400, np.random.default_rng(3))
    vocab = list(SPECIAL_TOKENS) + NUMBER_WORDS + TENS
    data = pretraining_dataset(str(corpus), BertTokenizer(vocab), seq_length=48,
                               max_predictions_per_seq=8, batch_size=32, seed=1)
    config = kbc.BertConfig(vocab_size=len(vocab), hidden_size=64, num_layers=2, num_heads=2,
                            intermediate_size=128, max_position_embeddings=48, dropout=0.0,
                            attention_dropout=0.0)
    model = ElectraPretrainer(kbc.BertEncoder(config), generator_size=args.generator_size,
                              rtd_weight=args.rtd_weight, seed=0)
    model.compile(optimizer=kbc.BertAdamW(args.learning_rate))
    history = model.fit(data.repeat(), steps_per_epoch=50, epochs=args.epochs,
                        verbose=0).history

    logits, replaced = [], []
    for x, y, w in data.take(20):
        outputs = model({**x, "masked_ids": y["mlm"], "masked_weights": w["mlm"]})
        real = np.asarray(x["padding_mask"]) > 0
        logits.append(np.asarray(outputs["rtd"])[..., 0][real])
        replaced.append(np.asarray(outputs["replaced"])[..., 0][real])
    logits, replaced = np.concatenate(logits), np.concatenate(replaced)
    probability = 1 / (1 + np.exp(-logits))
    share = replaced.mean()
    print(f"replacements: {args.replacements}, generator {args.generator_size}, "
          f"rtd weight {args.rtd_weight}, lr {args.learning_rate}, {50 * args.epochs} steps")
    for name in ("mlm_accuracy", "rtd_loss"):
        print(f"{name} by epoch: {[round(v, 3) for v in history[name]]}")
    print(f"replaced share {share:.3f}; detection AUC {auc(logits, replaced):.3f}; mean "
          f"probability replaced {probability[replaced == 1].mean():.3f}, original "
          f"{probability[replaced == 0].mean():.3f}; constant answer's loss "
          f"{-(share * np.log(share) + (1 - share) * np.log(1 - share)):.3f}")


if __name__ == "__main__":
    main()
