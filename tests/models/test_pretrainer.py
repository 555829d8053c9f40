import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.models.pretrainer import BertPretrainer
from tests.helpers import cross_entropy, encoder_batch, tiny_encoder

BATCH, SEQ, VOCAB = 4, 16, 100
HEAD_SHAPES = {
    "mlm/transform/kernel": (128, 128), "mlm/transform/bias": (128,),
    "mlm/layer_norm/gamma": (128,), "mlm/layer_norm/beta": (128,),
    "mlm/output_bias": (VOCAB,), "nsp/kernel": (128, 2), "nsp/bias": (2,)}


def make_pretrainer(next_sentence=True, **encoder_options):
    options = {"dropout": 0.0, "attention_dropout": 0.0, "num_layers": 1, **encoder_options}
    return BertPretrainer(tiny_encoder(**options), next_sentence=next_sentence)


def make_batch():
    x = encoder_batch(BATCH, SEQ)
    x["masked_positions"] = np.array([[1, 2, 0], [3, 5, 7], [1, 4, 0], [2, 3, 6]], "int32")
    y = {"mlm": np.array([[7, 8, 0], [9, 10, 11], [12, 13, 0], [14, 15, 16]], "int32"),
         "nsp": np.array([0, 1, 1, 0], "int32")}
    weights = {"mlm": (y["mlm"] > 0).astype("float32"), "nsp": np.ones(BATCH, "float32")}
    return x, y, weights


def test_outputs_and_tied_decoder():
    model = make_pretrainer()
    x, _, _ = make_batch()
    out = model(x)
    assert set(out) == {"mlm", "nsp"}
    assert tuple(out["mlm"].shape) == (BATCH, 3, VOCAB) and out["mlm"].dtype == "float32"
    assert tuple(out["nsp"].shape) == (BATCH, 2) and out["nsp"].dtype == "float32"
    assert model.masked_lm.embeddings.word_embeddings is model.encoder.word_embeddings
    # One table, trained (and saved) once.
    paths = [w.path for w in model.weights]
    assert paths.count("embeddings/word_embeddings") == 1 and len(set(paths)) == len(paths)


def test_default_loss_and_metrics_are_berts():
    model = make_pretrainer()
    model.compile(run_eagerly=True)
    x, y, weights = make_batch()
    result = model.evaluate(x, y, sample_weight=weights, batch_size=BATCH, return_dict=True,
                            verbose=0)
    out = keras.tree.map_structure(np.asarray, model(x))

    mlm_losses = cross_entropy(out["mlm"], y["mlm"])
    mlm_loss = (mlm_losses * weights["mlm"]).sum() / weights["mlm"].sum()
    nsp_loss = cross_entropy(out["nsp"], y["nsp"]).mean()
    hits = out["mlm"].argmax(-1) == y["mlm"]
    assert result.keys() == {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"}
    np.testing.assert_allclose(result["mlm_loss"], mlm_loss, rtol=1e-5)
    np.testing.assert_allclose(result["nsp_loss"], nsp_loss, rtol=1e-5)
    np.testing.assert_allclose(result["loss"], mlm_loss + nsp_loss, rtol=1e-5)
    np.testing.assert_allclose(
        result["mlm_accuracy"], (hits * weights["mlm"]).sum() / weights["mlm"].sum())
    np.testing.assert_allclose(
        result["nsp_accuracy"], (out["nsp"].argmax(-1) == y["nsp"]).mean())


def test_fits_datasets_with_and_without_sample_weights():
    model = make_pretrainer()
    model.compile(run_eagerly=True)
    x, y, weights = make_batch()
    datasets = {name: tf.data.Dataset.from_tensors(element) for name, element in {
        "full": (x, y, weights), "mlm only": (x, y, {"mlm": weights["mlm"]}),
        "none": (x, y)}.items()}
    losses = {name: model.evaluate(dataset, verbose=0, return_dict=True)["mlm_loss"]
              for name, dataset in datasets.items()}
    # Weights for "mlm" alone mean unit weights for "nsp"; no weights count every slot.
    assert losses["mlm only"] == losses["full"] != losses["none"]
    for dataset in datasets.values():
        assert np.isfinite(model.fit(dataset, shuffle=False, verbose=0).history["loss"]).all()


@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_consumes_pretraining_dataset_elements(tmp_path):
    pretraining_data = pytest.importorskip(
        "keras_bert_core.pretraining.data", reason="pretraining.data not importable")
    from keras_bert_core.text.wordpiece.bert_tokenizer import BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    rng = np.random.default_rng(0)
    documents = ["\n".join(" ".join(f"w{i}" for i in rng.integers(0, 95, 6)) for _ in range(4))
                 for _ in range(6)]
    (tmp_path / "corpus.txt").write_text("\n\n".join(documents) + "\n")
    dataset = pretraining_data.pretraining_dataset(
        str(tmp_path / "corpus.txt"), BertTokenizer(vocab), seq_length=SEQ,
        max_predictions_per_seq=3, batch_size=2, seed=1, window_size=3).take(2)
    model = make_pretrainer()
    model.compile()  # the defaults, in a compiled step as users run it
    history = model.fit(dataset, shuffle=False, verbose=0).history
    assert np.isfinite(history["loss"]).all()
    assert {"mlm_accuracy", "nsp_accuracy"} <= set(history)


def test_decoder_trains_the_word_table():
    model = make_pretrainer()
    model.compile(optimizer=keras.optimizers.SGD(1.0), run_eagerly=True)
    x, y, weights = make_batch()
    before = np.array(model.encoder.word_embeddings)
    model.fit(x, y, sample_weight=weights, batch_size=BATCH, verbose=0)
    after = np.array(model.encoder.word_embeddings)
    # Ids never fed to the encoder still move: their gradient comes through the tied decoder.
    unseen = np.setdiff1d(np.arange(VOCAB), x["token_ids"])
    assert unseen.size and (np.abs(after - before)[unseen].max(axis=1) > 0).all()


def test_head_weights_round_trip():
    model = make_pretrainer()
    x, _, _ = make_batch()
    rng = np.random.default_rng(3)
    weights = {name: rng.normal(size=shape).astype("float32")
               for name, shape in HEAD_SHAPES.items()}
    model.set_head_weights(weights)
    for name, value in model.get_head_weights().items():
        np.testing.assert_array_equal(value, weights[name])
    nsp = np.asarray(model(x)["nsp"])
    encoder_inputs = {name: x[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    pooled = np.asarray(model.encoder(encoder_inputs)["pooled_output"])
    np.testing.assert_allclose(nsp, pooled @ weights["nsp/kernel"] + weights["nsp/bias"],
                               rtol=1e-5, atol=1e-5)


def test_set_head_weights_names_every_problem_and_assigns_nothing():
    model = make_pretrainer()
    before = model.get_head_weights()
    weights = {name: np.zeros(shape) for name, shape in HEAD_SHAPES.items()}
    del weights["nsp/bias"]
    weights["mlm/output_bias"] = np.zeros(VOCAB + 1)
    weights["cls/predictions/bias"] = np.zeros(VOCAB)
    with pytest.raises(ValueError) as error:
        model.set_head_weights(weights)
    message = str(error.value)
    assert "unexpected weight 'cls/predictions/bias'" in message
    assert "missing weight 'nsp/bias'" in message
    assert "'mlm/output_bias' has shape (101,), the model expects (100,)" in message
    for name, value in model.get_head_weights().items():
        np.testing.assert_array_equal(value, before[name])


def test_set_head_weights_not_strict_keeps_missing_weights():
    model = make_pretrainer()
    before = model.get_head_weights()
    model.set_head_weights({"mlm/output_bias": np.ones(VOCAB)}, strict=False)
    after = model.get_head_weights()
    np.testing.assert_array_equal(after["mlm/output_bias"], np.ones(VOCAB))
    np.testing.assert_array_equal(after["nsp/kernel"], before["nsp/kernel"])


def test_masked_lm_only_computes_the_same_masked_lm_without_the_next_sentence_head():
    full = make_pretrainer(num_layers=2)
    model = make_pretrainer(next_sentence=False, num_layers=2)
    model.encoder.set_weights(full.encoder.get_weights())
    model.set_head_weights({name: value for name, value in full.get_head_weights().items()
                            if name.startswith("mlm/")})
    x, y, weights = make_batch()
    out = model(x)
    assert set(out) == {"mlm"} and model.next_sentence is None
    # Its last block computes only the masked positions, [CLS] not among them.
    np.testing.assert_allclose(out["mlm"], full(x)["mlm"], rtol=1e-5, atol=1e-5)
    assert set(model.get_head_weights()) == set(HEAD_SHAPES) - {"nsp/kernel", "nsp/bias"}
    # Only the next-sentence head reads the pooler: it is not trained.
    pooler = {id(w) for w in model.encoder.pooler.weights}
    assert pooler and not pooler & {id(w) for w in model.trainable_weights}

    model.compile(run_eagerly=True)
    # Next-sentence targets and weights in the data are ignored.
    result = model.evaluate(x, y, sample_weight=weights, batch_size=BATCH, return_dict=True,
                            verbose=0)
    mlm_losses = cross_entropy(np.asarray(out["mlm"]), y["mlm"])
    assert result.keys() == {"loss", "mlm_accuracy"}
    np.testing.assert_allclose(
        result["loss"], (mlm_losses * weights["mlm"]).sum() / weights["mlm"].sum(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"no targets for the model's outputs \['mlm'\]"):
        model.evaluate(x, {"nsp": y["nsp"]}, verbose=0)


def test_masked_lm_only_saves_and_loads(tmp_path):
    model = make_pretrainer(next_sentence=False)
    x, y, weights = make_batch()
    model.fit(x, y, sample_weight=weights, batch_size=BATCH, verbose=0)
    model.save(tmp_path / "mlm.keras")
    loaded = keras.saving.load_model(tmp_path / "mlm.keras")
    assert loaded.next_sentence is None and set(loaded(x)) == {"mlm"}
    np.testing.assert_allclose(loaded(x)["mlm"], model(x)["mlm"], rtol=1e-5, atol=1e-5)
    assert np.isfinite(loaded.fit(x, y, sample_weight=weights, verbose=0).history["loss"]).all()


def test_factorized_embeddings_albert_style():
    model = make_pretrainer(embedding_size=32)
    x, _, _ = make_batch()
    assert tuple(model(x)["mlm"].shape) == (BATCH, 3, VOCAB)
    shapes = {name: value.shape for name, value in model.get_head_weights().items()}
    assert shapes["mlm/transform/kernel"] == (128, 32)
    assert shapes["mlm/layer_norm/gamma"] == (32,)
