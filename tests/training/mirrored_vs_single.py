"""For test_distribution: the same training on one device and on a 2-replica
`MirroredStrategy` over the two logical CPUs tests/conftest.py configures (without and with
per-replica XLA)."""

import numpy as np

import keras_bert_core as kbc
from keras_bert_core.optimizers import create_optimizer
from keras_bert_core.training import distribution_strategy
from tests.training.toys import (
    tiny_config,
    toy_classifier,
    toy_dataset,
    toy_examples,
)

STEPS, GLOBAL_BATCH = 5, 8


def train(strategy, initial_weights, jit_compile="auto"):
    """Per-step losses and final weights of `STEPS` steps from `initial_weights`."""
    with strategy.scope():
        model = toy_classifier()
        model.set_weights(initial_weights)
        model.compile(optimizer=create_optimizer(1e-3, STEPS, num_warmup_steps=1),
                      jit_compile=jit_compile)
    # One step per epoch, so each epoch's loss is that step's loss, not a running mean.
    history = model.fit(toy_dataset(GLOBAL_BATCH).repeat(), steps_per_epoch=1, epochs=STEPS,
                        verbose=0)
    return history.history["loss"], model.get_weights()


def jit_compile_setting(strategy, jit_compile):
    """What a task model makes of a `jit_compile` argument under `strategy`: Keras's
    whole-step XLA, and the per-replica XLA step."""
    with strategy.scope():
        model = toy_classifier()
        model.compile(jit_compile=jit_compile)
    return [model.jit_compile, model.jit_compile_per_replica]


def pretrain_with_dropout(strategy):
    """Losses of a pretrainer with dropout (random ops, embedding gathers, the masked-LM
    gather: what Keras's own XLA step fails on under MirroredStrategy) under per-replica XLA."""
    x, _ = toy_examples(GLOBAL_BATCH * STEPS)
    x["masked_positions"] = np.tile(np.array([[1, 3, 5]], "int32"), (len(x["token_ids"]), 1))
    y = {"mlm": np.take_along_axis(x["token_ids"], x["masked_positions"], 1),
         "nsp": x["token_ids"][:, 2] % 2}
    with strategy.scope():
        config = tiny_config(dropout=0.1, attention_dropout=0.1)
        model = kbc.BertPretrainer(kbc.BertEncoder(config))
        model.compile(optimizer=create_optimizer(1e-3, STEPS, num_warmup_steps=1),
                      jit_compile=True)
    history = model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
    return history.history["loss"]


def max_difference(weights, others):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(weights, others, strict=True))


def results(mirrored):
    initial = toy_classifier().get_weights()
    single_losses, single_weights = train(distribution_strategy("one_device"), initial)
    mirrored_losses, mirrored_weights = train(mirrored, initial)
    xla_losses, xla_weights = train(mirrored, initial, jit_compile=True)
    return dict(
        replicas=mirrored.num_replicas_in_sync,
        single_losses=single_losses,
        mirrored_losses=mirrored_losses,
        max_weight_difference=max_difference(single_weights, mirrored_weights),
        mirrored_xla_losses=xla_losses,
        mirrored_xla_max_weight_difference=max_difference(single_weights, xla_weights),
        pretrainer_xla_losses=pretrain_with_dropout(mirrored),
        mirrored_jit_auto=jit_compile_setting(mirrored, "auto"),
        mirrored_jit_explicit=jit_compile_setting(mirrored, True),
    )
