import numpy as np

from keras_bert_core.models.metrics import IGNORE_LABEL, MaskedSparseCategoricalAccuracy
from keras_bert_core.models.token_classifier import BertTokenClassifier
from tests.helpers import cross_entropy, encoder_batch, tiny_encoder


def make_token_classifier():
    encoder = tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0)
    return BertTokenClassifier(encoder, num_classes=5, dropout=0.0)


def test_loss_and_accuracy_skip_ignored_labels_and_padding():
    model = make_token_classifier()
    model.compile(run_eagerly=True)
    x = encoder_batch(4, 12)
    labels = np.random.default_rng(0).integers(0, 5, size=(4, 12))
    labels[:, 0] = IGNORE_LABEL  # [CLS]
    labels[1, 3] = IGNORE_LABEL  # a second word piece
    padding = x["padding_mask"] == 0
    assert padding.any()  # padding keeps a real class label: it must not count anyway

    logits = np.asarray(model(x))
    assert logits.shape == (4, 12, 5) and logits.dtype == "float32"
    counted = (labels != IGNORE_LABEL) & ~padding
    safe = np.where(counted, labels, 0)
    result = model.evaluate(x, labels, batch_size=4, return_dict=True, verbose=0)
    np.testing.assert_allclose(
        result["loss"], cross_entropy(logits, safe)[counted].mean(), rtol=1e-5)
    np.testing.assert_allclose(
        result["accuracy"], (logits.argmax(-1) == labels)[counted].mean(), rtol=1e-6)

    # Per-example weights combine with the token mask.
    weights = np.array([1.0, 0.0, 0.0, 0.0], "float32")
    result = model.evaluate(x, labels, sample_weight=weights, batch_size=4, return_dict=True,
                            verbose=0)
    np.testing.assert_allclose(
        result["loss"], cross_entropy(logits, safe)[0][counted[0]].mean(), rtol=1e-5)


def test_masked_accuracy_metric_config_round_trip():
    metric = MaskedSparseCategoricalAccuracy(ignore_class=-1, name="tag_accuracy")
    clone = MaskedSparseCategoricalAccuracy.from_config(metric.get_config())
    assert clone.ignore_class == -1 and clone.name == "tag_accuracy"
    clone.update_state(np.array([[1, -1]]), np.array([[[0.0, 1.0], [1.0, 0.0]]]))
    assert float(clone.result()) == 1.0
