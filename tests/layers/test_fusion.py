"""The fusion switch: it changes the ops of a traced step, not its results."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.layers import LayerNorm
from keras_bert_core.layers.activations import activate
from keras_bert_core.layers.flat_dense import FlatDense
from keras_bert_core.layers.fusion import fusion


@pytest.mark.parametrize("switch, plain_op", [("elementwise", "Erf"), ("dense", "Transpose")])
def test_fusion_switch_changes_the_ops_not_the_results(switch, plain_op):
    # Off, GELU's erf runs as a TensorFlow op of the step (on: inside the XLA kernel), and
    # Dense goes through tensordot's transposes (on: FlatDense's reshapes).
    rng = np.random.default_rng(4)
    dense, norm = FlatDense(8), LayerNorm(epsilon=1e-12)
    dense.build((None, 4))
    norm.build((None, 8))
    x = tf.constant(rng.normal(size=(2, 5, 4)), tf.float32)
    upstream = tf.constant(rng.normal(size=(2, 5, 8)), tf.float32)
    variables = [*dense.trainable_variables, *norm.trainable_variables]

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = norm(activate("gelu", dense(x), training=True), training=True)
        return [y, *tape.gradient(y, [x, *variables], upstream)]

    traced = {}
    for enabled in (True, False):
        with fusion(**{switch: enabled}):
            traced[enabled] = tf.function(step, input_signature=[
                tf.TensorSpec([None, None, 4], tf.float32)]).get_concrete_function()
    ops = {enabled: {op.type for op in f.graph.get_operations()} for enabled, f in traced.items()}
    assert plain_op in ops[False] and plain_op not in ops[True]
    for a, b in zip(traced[True](x), traced[False](x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("block_kwargs", [
    {}, {"norm_first": True}, {"gated_feed_forward": True, "use_bias": False},
    {"remat": True}], ids=["post_ln", "pre_ln", "geglu_no_bias", "remat"])
def test_unpadded_feed_forward_computes_the_real_tokens_as_the_padded_one(block_kwargs):
    # Rows of 7, 3 and 1 real tokens of 8: 11 of 24 positions, their rows then index 0 again
    # up to 24 (ROW_MULTIPLE is larger). The loss reads the real tokens alone, as every loss
    # and pooling of the package does.
    from keras_bert_core.layers import TransformerEncoderBlock, attention_bias
    from keras_bert_core.layers.fusion import unpadded_rows

    rng = np.random.default_rng(5)
    mask = (np.arange(8)[None] < np.array([[7], [3], [1]])).astype("int32")
    x = tf.constant(rng.normal(size=(3, 8, 16)), tf.float32)
    upstream = tf.constant(rng.normal(size=(3, 8, 16)) * mask[..., None], tf.float32)
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32, **block_kwargs)
    block(x, attention_bias(mask))

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = block(x, attention_bias(mask), token_mask=mask, training=True)
        return [y, *tape.gradient(y, [x, *block.trainable_variables], upstream)]

    results = {}
    for unpadded in (True, False):
        with fusion(unpadded=unpadded):
            traced = tf.function(step).get_concrete_function(tf.TensorSpec(x.shape, x.dtype))
        ops = {op.type for op in traced.graph.get_operations()}
        assert ("ScatterNd" in ops) is unpadded
        results[unpadded] = traced(x)
    unpadded, padded = results[True], results[False]
    real = mask[..., None].astype(bool)
    np.testing.assert_allclose(np.where(real, unpadded[0], 0), np.where(real, padded[0], 0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.where(real, 0, unpadded[0]), 0)  # the padding's rows
    for a, b in zip(unpadded[1:], padded[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    rows, count = unpadded_rows(mask)
    assert int(count) == 11 and rows.shape == (24,)


def test_at_inference_the_feed_forward_skips_the_padding_only_for_real_token_readers():
    # An encoder's sequence output keeps the padding's values (as the reference BERT's);
    # inside `real_tokens_only` (an embedder's call) the padding's rows are zeros and the
    # real tokens' outputs are the same.
    from keras_bert_core.layers.fusion import real_tokens_only
    from tests.helpers import encoder_batch, tiny_encoder

    encoder = tiny_encoder()
    inputs = encoder_batch(batch=3, seq=12)
    real = inputs["padding_mask"][..., None].astype(bool)
    assert not real.all()

    def encode(batch):
        return encoder(batch, training=False)["sequence_output"]

    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in inputs}
    traced = {}
    for unpadded in (True, False):
        with real_tokens_only() if unpadded else fusion():
            traced[unpadded] = tf.function(encode).get_concrete_function(spec)
        ops = {op.type for op in traced[unpadded].graph.get_operations()}
        assert bool(ops & {"If", "StatelessIf"}) is unpadded  # a batch without padding: as before
    unpadded, padded = (np.asarray(traced[u](inputs)) for u in (True, False))
    np.testing.assert_allclose(np.where(real, unpadded, 0), np.where(real, padded, 0),
                               rtol=1e-5, atol=1e-5)
    padding = ~real[..., 0]
    assert (unpadded[padding] == 0).all() and (padded[padding] != 0).any()
    full = {name: value[:1] for name, value in inputs.items()}  # a row without padding
    np.testing.assert_allclose(traced[True](full), traced[False](full), rtol=1e-5, atol=1e-5)
