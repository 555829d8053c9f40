import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from tests.helpers import zero_initialized_weights

TINY = kbc.BertConfig.preset("tiny", vocab_size=200, max_position_embeddings=64)


def make_inputs(batch=3, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 200, size=(batch, seq)).astype("int32")
    lengths = rng.integers(4, seq + 1, size=batch)
    mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    segments = (np.arange(seq)[None] >= lengths[:, None] // 2).astype("int32") * mask
    return {"token_ids": ids * mask, "segment_ids": segments, "padding_mask": mask}


def test_parameter_counts_match_published_bert():
    # BERT-base with pooler: 109,482,240; BERT-large: 335,141,888.
    with zero_initialized_weights():
        assert kbc.BertEncoder(kbc.BertConfig.preset("base")).count_params() == 109_482_240
        assert kbc.BertEncoder(kbc.BertConfig.preset("large")).count_params() == 335_141_888


def test_outputs_and_any_sequence_length():
    encoder = kbc.BertEncoder(TINY, output_encoder_outputs=True)
    for seq in (5, 17, 64):
        out = encoder(make_inputs(seq=seq))
        assert tuple(out["sequence_output"].shape) == (3, seq, 128)
        assert tuple(out["pooled_output"].shape) == (3, 128)
        assert len(out["encoder_outputs"]) == TINY.num_layers
        np.testing.assert_allclose(out["encoder_outputs"][-1], out["sequence_output"])


def test_inputs_are_taken_by_name():
    encoder = kbc.BertEncoder(TINY)
    inputs = make_inputs()
    extra = {"masked_positions": np.zeros((3, 2), "int32"), **inputs}
    np.testing.assert_array_equal(encoder(inputs)["sequence_output"],
                                  encoder(extra)["sequence_output"])
    with pytest.raises(ValueError, match="padding_mask"):
        encoder({k: v for k, v in inputs.items() if k != "padding_mask"})


def test_padding_does_not_change_real_token_outputs():
    encoder = kbc.BertEncoder(TINY)
    inputs = make_inputs(batch=1, seq=8)
    inputs = {k: v.copy() for k, v in inputs.items()}
    inputs["padding_mask"][:] = [[1, 1, 1, 1, 1, 0, 0, 0]]
    short = {k: v[:, :5] for k, v in inputs.items()}
    padded = {k: v.copy() for k, v in inputs.items()}
    padded["token_ids"][:, 5:] = 7  # garbage under the padding must not leak
    a = encoder(short)["sequence_output"]
    b = encoder(padded)["sequence_output"][:, :5]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_packed_documents_compute_what_separate_rows_would():
    encoder = kbc.BertEncoder(TINY)
    packed = make_inputs(batch=1, seq=10)
    packed["segment_ids"][:] = 0
    packed["padding_mask"] = np.array([[1, 1, 1, 1, 2, 2, 2, 2, 2, 0]], "int32")
    second = {k: v[:, 4:9] for k, v in packed.items()}
    second["padding_mask"] = np.ones_like(second["padding_mask"])
    out = encoder(packed)["sequence_output"]
    np.testing.assert_allclose(out[:, 4:9], encoder(second)["sequence_output"], atol=1e-5)
    changed = {k: v.copy() for k, v in packed.items()}
    changed["token_ids"][:, :4] = [[9, 8, 7, 6]]
    np.testing.assert_allclose(out[:, 4:9], encoder(changed)["sequence_output"][:, 4:9], atol=1e-5)


def test_keras_file_round_trip_gives_identical_outputs(tmp_path):
    encoder = kbc.BertEncoder(TINY, output_encoder_outputs=True)
    inputs = make_inputs()
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, kbc.BertEncoder) and restored.config == TINY
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(encoder(inputs)[key], restored(inputs)[key])


@pytest.mark.parametrize("options", [
    {"norm_first": True},
    {"position_embedding": "sinusoidal"},
    {"embedding_size": 32},
    {"hidden_act": "gelu_approximate"},
])
def test_variants_build_and_round_trip(options, tmp_path):
    encoder = kbc.BertEncoder(kbc.BertConfig.from_dict({**TINY.to_dict(), **options}))
    out = encoder(make_inputs())["sequence_output"]
    assert np.isfinite(np.asarray(out)).all()
    encoder.save(tmp_path / "variant.keras")
    restored = keras.models.load_model(tmp_path / "variant.keras")
    np.testing.assert_array_equal(out, restored(make_inputs())["sequence_output"])


def test_factorized_embeddings_have_fewer_parameters():
    full = kbc.BertEncoder(TINY).count_params()
    factorized = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=200,
                                                       max_position_embeddings=64,
                                                       embedding_size=32)).count_params()
    assert factorized < full


def test_one_hot_lookup_equals_gather():
    gather = kbc.BertEncoder(TINY)
    one_hot = kbc.BertEncoder(TINY, one_hot_embeddings=True)
    one_hot.set_weights(gather.get_weights())
    inputs = make_inputs()
    np.testing.assert_allclose(gather(inputs)["sequence_output"],
                               one_hot(inputs)["sequence_output"], atol=1e-5)


def test_remat_gives_the_same_gradients():
    import tensorflow as tf

    plain = kbc.BertEncoder(TINY)
    remat = kbc.BertEncoder(TINY, remat=True)
    remat.set_weights(plain.get_weights())
    inputs = make_inputs()

    def gradients(model):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(inputs)["pooled_output"] ** 2)
        return [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]

    for a, b in zip(gradients(plain), gradients(remat), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_keeps_norms_and_softmax_in_float32(policy):
    encoder = kbc.BertEncoder(TINY, dtype=policy)
    compute = policy.split("_")[1]
    out = encoder(make_inputs())
    assert out["sequence_output"].dtype == compute
    assert encoder.dtype_policy.name == policy
    assert np.isfinite(np.asarray(out["sequence_output"], "float32")).all()
    assert encoder.blocks[0].attention_norm.compute_dtype == "float32"
    assert encoder.embeddings.layer_norm.compute_dtype == "float32"
    assert all(v.dtype == "float32" for v in encoder.weights)
    reference = kbc.BertEncoder(TINY)
    reference.set_weights(encoder.get_weights())
    diff = np.abs(np.asarray(out["sequence_output"], "float32")
                  - np.asarray(reference(make_inputs())["sequence_output"])).max()
    assert diff < 0.1  # half precision rounding, not a different computation


@pytest.mark.parametrize("remat", [False, True])
def test_trains_under_fit(remat):
    encoder = kbc.BertEncoder(TINY, remat=remat)
    inputs = kbc.models.encoder.encoder_inputs()
    logits = keras.layers.Dense(2)(encoder(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = make_inputs(batch=16, seq=8)
    y = (x["token_ids"][:, 0] % 2).astype("int32")
    history = model.fit(x, y, epochs=8, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
