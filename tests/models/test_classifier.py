import numpy as np
import pytest

from keras_bert_core.models.classifier import BertClassifier
from tests.helpers import check_trains, cross_entropy, encoder_batch, tiny_encoder


def make_classifier(num_classes, **options):
    encoder = tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0)
    return BertClassifier(encoder, num_classes, **options)


def test_classifies_single_texts_and_pairs_with_one_model():
    model = make_classifier(3)
    x = encoder_batch(4, 12)
    logits = np.asarray(model(x))
    assert logits.shape == (4, 3) and logits.dtype == "float32"
    # A pair differs from a single text only in its segment ids.
    single = {**x, "segment_ids": np.zeros_like(x["segment_ids"])}
    assert not np.allclose(np.asarray(model(single)), logits)


def test_default_loss_and_accuracy():
    model = make_classifier(3, dropout=0.0)
    model.compile(run_eagerly=True)
    x, labels = encoder_batch(4, 12), np.array([0, 2, 1, 1])
    result = model.evaluate(x, labels, batch_size=4, return_dict=True, verbose=0)
    logits = np.asarray(model(x))
    assert result.keys() == {"loss", "accuracy"}
    np.testing.assert_allclose(result["loss"], cross_entropy(logits, labels).mean(), rtol=1e-5)
    np.testing.assert_allclose(result["accuracy"], (logits.argmax(-1) == labels).mean())


def test_regression_with_one_class():
    model = make_classifier(1, dropout=0.0)
    model.compile(run_eagerly=True)
    x, scores = encoder_batch(4, 12), np.array([0.5, 4.0, 2.5, 1.0], "float32")
    predictions = np.asarray(model(x))
    assert predictions.shape == (4, 1)
    result = model.evaluate(x, scores, batch_size=4, return_dict=True, verbose=0)
    assert result.keys() == {"loss", "mean_absolute_error"}
    np.testing.assert_allclose(result["loss"], ((predictions[:, 0] - scores) ** 2).mean(),
                               rtol=1e-5)
    check_trains(model, x, scores)


def test_dropout_is_active_in_training_only():
    model = make_classifier(3, dropout=0.5)
    x = encoder_batch(4, 12)
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(model(x)))
    assert not np.allclose(np.asarray(model(x, training=True)), np.asarray(model(x)))


def test_rejects_a_bad_number_of_classes():
    with pytest.raises(ValueError, match="num_classes must be a positive integer, got 0"):
        make_classifier(0)
