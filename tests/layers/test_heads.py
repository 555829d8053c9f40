import keras
import numpy as np
import pytest
from keras import ops

from keras_bert_core.layers import BertEmbeddings
from keras_bert_core.layers.heads import ClassificationHead, MaskedLMHead, SpanLabelingHead
from tests.helpers import run_layer_checks

RNG = np.random.default_rng(0)
STATES = RNG.normal(size=(2, 8, 16)).astype("float32")
POSITIONS = np.array([[1, 4, 7], [2, 0, 0]], "int32")
PADDING = np.array([[1] * 8, [1] * 5 + [0] * 3], "int32")


def embeddings(embedding_size=None):
    layer = BertEmbeddings(vocab_size=50, hidden_size=16, max_position_embeddings=16,
                           embedding_size=embedding_size, name="embeddings")
    layer.build()
    return layer


@pytest.mark.filterwarnings("ignore:Gradients do not exist")
def test_masked_lm_head_layer_checks():
    run_layer_checks(
        lambda **kwargs: MaskedLMHead(embeddings(), **kwargs), (STATES, POSITIONS),
        expected_output_shape=(2, 3, 50), mixed_precision_output_dtype="float32",
        # The head reads only the word table of the embeddings.
        untrained_weights=[r"^embeddings/(position|token_type|layer_norm)"])


def test_masked_lm_head_decodes_with_the_tied_table_at_masked_positions_only():
    table_owner = embeddings()
    head = MaskedLMHead(table_owner, activation="gelu")
    logits = np.asarray(head(STATES, POSITIONS))
    assert head.embeddings.word_embeddings is table_owner.word_embeddings

    gathered = np.take_along_axis(STATES, POSITIONS[:, :, None], axis=1)
    hidden = keras.activations.gelu(
        gathered @ np.asarray(head.transform.kernel) + np.asarray(head.transform.bias),
        approximate=False)
    expected = np.asarray(head.layer_norm(hidden)) @ np.asarray(table_owner.word_embeddings).T
    np.testing.assert_allclose(logits, expected + np.asarray(head.output_bias), atol=1e-5)

    # States away from the masked positions do not matter.
    changed = STATES.copy()
    changed[0, [0, 2, 3, 5, 6]] += 5.0
    np.testing.assert_array_equal(np.asarray(head(changed, POSITIONS)), logits)

    # The decoder is the table itself, not a copy of it.
    table_owner.word_embeddings.assign(np.asarray(table_owner.word_embeddings) * 2.0)
    assert not np.allclose(np.asarray(head(STATES, POSITIONS)), logits)


def test_masked_lm_head_trains_the_table_without_transposing_it():
    import tensorflow as tf

    head = MaskedLMHead(embeddings())
    table = head.embeddings.word_embeddings

    @tf.function
    def table_gradient(states):
        with tf.GradientTape() as tape:
            logits = head(states)
        return tape.gradient(logits, table.value)

    graph = table_gradient.get_concrete_function(tf.constant(STATES[:, :3])).graph
    # A transpose of the table, or of its [vocab, width] gradient, costs a pass over both.
    assert "Transpose" not in {op.type for op in graph.get_operations()}
    assert table_gradient(tf.constant(STATES[:, :3])).shape == table.shape


def test_masked_lm_head_maps_down_to_factorized_embeddings():
    head = MaskedLMHead(embeddings(embedding_size=8))
    assert tuple(head(STATES, POSITIONS).shape) == (2, 3, 50)
    assert tuple(head.transform.kernel.shape) == (16, 8)
    assert tuple(head.layer_norm.gamma.shape) == (8,)
    assert tuple(head.output_bias.shape) == (50,)


def test_masked_lm_head_rejects_bad_arguments():
    with pytest.raises(ValueError, match="activation 'swish'"):
        MaskedLMHead(embeddings(), activation="swish")
    with pytest.raises(TypeError, match="embedding layer"):
        MaskedLMHead(np.zeros((50, 16)))
    dense = keras.layers.Dense(4, name="dense")
    dense.build((None, 16))
    with pytest.raises(TypeError, match="dense has no `word_embeddings` table"):
        MaskedLMHead(dense)(STATES, POSITIONS)


@pytest.mark.parametrize("inputs, expected", [
    ((STATES[:, 0],), (2, 3)),  # pooled output: sequence classification
    ((STATES,), (2, 8, 3)),  # sequence output: token classification
])
def test_classification_head_layer_checks(inputs, expected):
    run_layer_checks(lambda **kwargs: ClassificationHead(3, dropout=0.1, **kwargs), inputs,
                     expected_output_shape=expected, mixed_precision_output_dtype="float32")


def test_classification_head_rejects_bad_num_classes():
    with pytest.raises(ValueError, match="num_classes must be a positive integer, got 0"):
        ClassificationHead(0)


def test_span_labeling_head_layer_checks():
    run_layer_checks(SpanLabelingHead, (STATES, PADDING),
                     expected_output_shape={"start_logits": (2, 8), "end_logits": (2, 8)},
                     mixed_precision_output_dtype="float32")


def test_span_labeling_head_never_picks_padding():
    head = SpanLabelingHead()
    out = head(STATES, PADDING)
    dense = np.asarray(head.dense(STATES))
    for index, key in enumerate(("start_logits", "end_logits")):
        logits = np.asarray(out[key])
        np.testing.assert_allclose(logits[PADDING == 1], dense[..., index][PADDING == 1])
        assert (logits[PADDING == 0] < -1e8).all()
        probabilities = np.asarray(ops.softmax(logits, axis=-1))
        assert probabilities[PADDING == 0].max() == 0.0
