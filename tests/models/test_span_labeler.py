import numpy as np
import pytest

from keras_bert_core.models.span_labeler import BertSpanLabeler
from tests.helpers import cross_entropy, encoder_batch, tiny_encoder


def make_span_labeler():
    return BertSpanLabeler(tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0))


def test_start_and_end_logits_never_point_at_padding():
    model = make_span_labeler()
    x = encoder_batch(4, 12)
    out = model(x)
    assert set(out) == {"start_logits", "end_logits"}
    padding = x["padding_mask"] == 0
    assert padding.any()
    for logits in out.values():
        logits = np.asarray(logits)
        assert logits.shape == (4, 12) and logits.dtype == "float32"
        assert (logits[padding] < -1e8).all() and (np.abs(logits[~padding]) < 1e3).all()
        assert not padding[np.arange(4), logits.argmax(-1)].any()


@pytest.mark.parametrize("names", [("start_positions", "end_positions"),
                                   ("start_logits", "end_logits")])
def test_loss_is_the_mean_of_start_and_end_cross_entropy(names):
    model = make_span_labeler()
    model.compile(run_eagerly=True)
    x = encoder_batch(4, 12)
    starts, ends = np.array([1, 3, 0, 5]), np.array([2, 6, 0, 5])
    result = model.evaluate(x, dict(zip(names, (starts, ends), strict=True)), batch_size=4,
                            return_dict=True, verbose=0)
    out = {key: np.asarray(value) for key, value in model(x).items()}
    start_loss = cross_entropy(out["start_logits"], starts).mean()
    end_loss = cross_entropy(out["end_logits"], ends).mean()
    np.testing.assert_allclose(result["loss"], (start_loss + end_loss) / 2, rtol=1e-5)
    np.testing.assert_allclose(result["start_logits_loss"], start_loss, rtol=1e-5)
    np.testing.assert_allclose(
        result["end_logits_accuracy"], (out["end_logits"].argmax(-1) == ends).mean())
    assert "start_logits_accuracy" in result
