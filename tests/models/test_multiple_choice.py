import numpy as np
import pytest

from keras_bert_core.models.multiple_choice import BertMultipleChoice
from tests.helpers import cross_entropy, encoder_batch, tiny_encoder

BATCH, CHOICES, SEQ = 3, 4, 10


def make_model():
    encoder = tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0)
    return BertMultipleChoice(encoder, num_choices=CHOICES, dropout=0.0)


def make_inputs():
    rows = encoder_batch(BATCH * CHOICES, SEQ)
    return {name: value.reshape(BATCH, CHOICES, SEQ) for name, value in rows.items()}


def test_each_choice_is_scored_on_its_own_row():
    model = make_model()
    x = make_inputs()
    logits = np.asarray(model(x))
    assert logits.shape == (BATCH, CHOICES) and logits.dtype == "float32"
    for choice in range(CHOICES):
        pooled = model.encoder({name: value[:, choice] for name, value in x.items()})
        expected = np.asarray(model.head(pooled["pooled_output"]))[:, 0]
        np.testing.assert_allclose(logits[:, choice], expected, rtol=1e-5, atol=1e-5)


def test_loss_is_softmax_cross_entropy_across_choices():
    model = make_model()
    model.compile(run_eagerly=True)
    x, answers = make_inputs(), np.array([3, 0, 1])
    result = model.evaluate(x, answers, batch_size=BATCH, return_dict=True, verbose=0)
    logits = np.asarray(model(x))
    np.testing.assert_allclose(result["loss"], cross_entropy(logits, answers).mean(), rtol=1e-5)
    np.testing.assert_allclose(result["accuracy"], (logits.argmax(-1) == answers).mean())


def test_rejects_fewer_than_two_choices():
    with pytest.raises(ValueError, match="num_choices must be an integer >= 2, got 1"):
        BertMultipleChoice(tiny_encoder(num_layers=1), num_choices=1)
