"""Task models that carry their preprocessor: raw text into `fit`, `evaluate` and
`predict`, and `.keras` files that hold the vocabulary as an asset."""

import json
import pathlib
import re
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core import keras_internals
from keras_bert_core.errors import VocabularyMismatchError
from tests.helpers import global_dtype_policy
from tests.models import raw_text_mirrored

# Models saved before any fit: Keras says it does not restore their unbuilt optimizer.
pytestmark = pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")

DATA = pathlib.Path(__file__).parents[1] / "text" / "data"
WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "fox", ".",
             "a", "dog", "is", "what", "?", "brown", "runs", "cat"]
VOCABULARIES = {"wordpiece": WORDPIECE, "byte_pair": str(DATA / "bpe" / "vocab.json"),
                "sentencepiece": str(DATA / "sentencepiece" / "spiece.model")}
SEQ = 16
TEXTS = ["The quick fox.", "a dog runs", "what is a cat ?", "the brown dog", "fox"]
QUESTIONS = ["what is a fox ?", "what runs ?", "what is brown ?", "a cat ?", "the dog"]


def make_preprocessor(kind="wordpiece"):
    return kbc.BertPreprocessor(VOCABULARIES[kind], seq_length=SEQ)


def make_encoder(preprocessor):
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=32, dropout=0.0,
                                   attention_dropout=0.0)
    return kbc.BertEncoder(config)


# Each task model with its raw text and the shape `predict` gives for the five examples.
def classifier(pre):
    return kbc.BertClassifier(make_encoder(pre), 3, dropout=0.0, preprocessor=pre), \
        TEXTS, (5, 3)


def classifier_pairs(pre):
    return kbc.BertClassifier(make_encoder(pre), 3, dropout=0.0, preprocessor=pre), \
        (QUESTIONS, TEXTS), (5, 3)


def regression(pre):
    return kbc.BertClassifier(make_encoder(pre), 1, dropout=0.0, preprocessor=pre), \
        (TEXTS, QUESTIONS), (5, 1)


def span_labeler(pre):
    return kbc.BertSpanLabeler(make_encoder(pre), preprocessor=pre), (QUESTIONS, TEXTS), \
        {"start_logits": (5, SEQ), "end_logits": (5, SEQ)}


def token_classifier(pre):
    return kbc.BertTokenClassifier(make_encoder(pre), 4, dropout=0.0, preprocessor=pre), \
        TEXTS, (5, SEQ, 4)


def multiple_choice(pre):
    choices = [[text, question] for text, question in zip(TEXTS, QUESTIONS, strict=True)]
    return kbc.BertMultipleChoice(make_encoder(pre), 2, dropout=0.0, preprocessor=pre), \
        (QUESTIONS, choices), (5, 2)


CASES = [classifier, classifier_pairs, regression, span_labeler, token_classifier,
         multiple_choice]


def shapes(outputs):
    return {k: v.shape for k, v in outputs.items()} if isinstance(outputs, dict) \
        else outputs.shape


def assert_same_outputs(actual, expected):
    for a, b in zip(tf.nest.flatten(actual), tf.nest.flatten(expected), strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_predict_takes_text_on_every_task_model(case):
    model, text, expected_shape = case(make_preprocessor())
    outputs = model.predict(text, batch_size=2, verbose=0)
    assert shapes(outputs) == expected_shape
    # The same numbers as the model's outputs for the preprocessor's inputs, padded to
    # seq_length in one batch.
    inputs = model.preprocess_text(text, static_shape=True)
    assert_same_outputs(outputs, model.predict(inputs, verbose=0))
    dataset = tf.data.Dataset.from_tensor_slices(text).batch(3)
    assert_same_outputs(model.predict(dataset, verbose=0), outputs)


def test_per_token_outputs_line_up_with_the_preprocessed_tokens():
    model, text, _ = token_classifier(make_preprocessor())
    mask = model.preprocess_text(text, static_shape=True)["padding_mask"].numpy()
    logits = model.predict(text, batch_size=2, verbose=0)
    assert logits.shape[:2] == mask.shape  # padded alike, whatever each batch's longest


class RecordingPreprocessor:
    """A duck-typed preprocessor (a plain callable) that records how it is called."""

    def __init__(self):
        self.preprocessor = make_preprocessor()
        self.static_shapes = []

    def __call__(self, text, static_shape=None):
        self.static_shapes.append(static_shape)
        return self.preprocessor(text, static_shape=static_shape)


def test_any_callable_preprocesses_and_predict_pads_to_the_longest_text():
    recording = RecordingPreprocessor()
    model = kbc.BertClassifier(make_encoder(recording.preprocessor), 3, preprocessor=recording)
    model.predict(TEXTS, batch_size=2, verbose=0)
    assert recording.static_shapes == [False] * 3  # each of the 3 batches once
    recording.static_shapes.clear()
    model.evaluate(["fox"], [1], verbose=0)
    model.fit(["fox"], [1], verbose=0)
    assert set(recording.static_shapes) == {True}
    # A preprocessor that takes no static_shape is called with the text alone.
    model.preprocessor = recording.preprocessor.__call__
    assert model.predict(["fox"], verbose=0).shape == (1, 3)


@pytest.mark.slow  # three fits and four evaluations, each traced, per model
@pytest.mark.parametrize("case", [classifier_pairs, token_classifier, multiple_choice],
                         ids=lambda case: case.__name__)
def test_fit_and_evaluate_take_text(case):
    model, text, _ = case(make_preprocessor())
    x = model.preprocess_text(text, static_shape=True)
    y = (np.array([[1, 2, 0, 3] * 4] * 5, "int32") if case is token_classifier
         else np.array([0, 1, 1, 0, 1], "int32") if case is multiple_choice
         else np.array([0, 2, 1, 2, 0], "int32"))
    # evaluate on text equals evaluate on the preprocessor's inputs
    np.testing.assert_allclose(model.evaluate(text, y, batch_size=2, verbose=0),
                               model.evaluate(x, y, batch_size=2, verbose=0), rtol=1e-5)
    history = model.fit(text, y, batch_size=2, epochs=2, validation_split=0.4, verbose=0)
    assert set(history.history) >= {"loss", "val_loss"}
    assert history.history["loss"][-1] < history.history["loss"][0]
    dataset = tf.data.Dataset.from_tensor_slices((text, y)).batch(2)
    history = model.fit(dataset, validation_data=(text, y), shuffle=False, verbose=0)
    assert np.isfinite(history.history["val_loss"][0])


def test_span_labeler_fits_text_pairs_with_token_positions():
    model, text, _ = span_labeler(make_preprocessor())
    x = model.preprocess_text(text, static_shape=True)
    # The answer: the context's tokens (segment 1) but its last.
    y = {"start_positions": np.argmax(x["segment_ids"].numpy(), axis=1),
         "end_positions": x["padding_mask"].numpy().sum(axis=1) - 3}
    history = model.fit(text, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_text_without_a_preprocessor_is_one_clear_error():
    model = kbc.BertClassifier(make_encoder(make_preprocessor()), 2)
    assert model.preprocessor is None and "preprocessor" not in model.get_config()
    for call in (lambda: model.predict(["a text"]), lambda: model.fit(["a text"], [1]),
                 lambda: model.evaluate((["a"], ["b"]), [1])):
        with pytest.raises(ValueError, match="was given text but has no preprocessor"):
            call()
    with pytest.raises(TypeError, match="predict got a list of numbers; a model takes texts"):
        model.predict([[2, 11, 3]])  # ids as lists: Keras's "Unrecognized data type" before
    model.preprocessor = make_preprocessor()  # attached later
    assert model.predict("a text", verbose=0).shape == (1, 2)


def test_a_preprocessor_the_encoder_cannot_read_is_refused_where_they_meet():
    """Ids with no row in the word embeddings, or sequences past the position table, failed
    only at the first such text, deep inside TensorFlow's gather."""
    pre = make_preprocessor()
    narrow = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=10,
                                                   max_position_embeddings=32))
    with pytest.raises(VocabularyMismatchError, match=r"the preprocessor's vocabulary "
                       r"has 18 tokens but the model's word embeddings have only 10 rows"):
        kbc.BertClassifier(narrow, 2, preprocessor=pre)
    short = kbc.BertPreprocessor(WORDPIECE, seq_length=64)
    model = kbc.BertClassifier(make_encoder(pre), 2)
    with pytest.raises(ValueError, match="^the preprocessor's seq_length 64 exceeds the "
                                         "model's max_position_embeddings 32$"):
        model.preprocessor = short
    assert model.preprocessor is None
    # A table with more rows than the vocabulary (a preset's sizes) reads every id.
    wide = kbc.BertEncoder(kbc.BertConfig.preset("tiny", max_position_embeddings=32))
    assert kbc.BertClassifier(wide, 2, preprocessor=pre).predict(TEXTS, verbose=0).shape == (5, 2)


def test_bad_text_input_names_the_problem():
    model, _, _ = multiple_choice(make_preprocessor())
    with pytest.raises(ValueError, match=r"takes text as a tuple \(contexts, choices\)"):
        model.predict(TEXTS, verbose=0)
    with pytest.raises(ValueError, match=r"choices \[batch, 2\]"):
        model.predict((TEXTS, [[t] * 3 for t in TEXTS]), verbose=0)
    classifier_model, _, _ = classifier(make_preprocessor())
    with pytest.raises(ValueError, match="batch it first"):
        classifier_model.predict(tf.data.Dataset.from_tensor_slices(TEXTS), verbose=0)
    with pytest.raises(ValueError, match="different numbers of examples"):
        classifier_model.fit(TEXTS, [0, 1], verbose=0)


def test_a_model_of_a_task_reads_its_tasks_texts_only():
    """A tuple is read as the segments of pairs (issue 31: a single-text classifier answered
    `("ball and paddle game", "perl module")` as one pair): a model built for single texts
    refuses it, one built for pairs refuses single texts, in `predict`, `fit` and
    `evaluate` alike; lists, and models without a task, read as before."""
    pre = make_preprocessor()
    single = kbc.BertClassifier(make_encoder(pre), 3, preprocessor=pre, name="topics",
                                task_settings={"name": "classify"})
    pair = kbc.BertClassifier(make_encoder(pre), 3, preprocessor=pre, name="pairs",
                              task_settings={"name": "pair"})
    squad = kbc.BertSpanLabeler(make_encoder(pre), preprocessor=pre, name="reader",
                                task_settings={"name": "squad"})
    y = np.array([0, 2, 1, 2, 0])
    refuses_pairs = ("BertClassifier 'topics' reads one text per example (its task is "
                     "'classify'); got a tuple of 2, which is read as pairs: pass the texts as "
                     "a list of strings")
    for call in (lambda: single.predict(("ball and paddle game", "perl module"), verbose=0),
                 lambda: single.fit((TEXTS, QUESTIONS), y, verbose=0),
                 lambda: single.evaluate(
                     tf.data.Dataset.from_tensor_slices(((TEXTS, QUESTIONS), y)).batch(2),
                     verbose=0)):
        with pytest.raises(ValueError) as error:
            call()
        assert str(error.value) == refuses_pairs
    for model, given in ((pair, "(first_texts, second_texts)"), (squad, "(questions, contexts)")):
        for call in (lambda m=model: m.predict(TEXTS, verbose=0),
                     lambda m=model: m.fit(TEXTS, y, verbose=0)):
            with pytest.raises(ValueError, match=rf"reads a pair of texts per example \(its "
                               rf"task is '\w+'\); got single texts: pass a tuple "
                               rf"{re.escape(given)}"):
                call()
    untasked, _, _ = classifier(pre)
    for model in (single, untasked):
        with pytest.raises(ValueError, match=r"got a tuple of 3\b"):
            model.predict(("a", "b", "c"), verbose=0)
        with pytest.raises(ValueError, match=r"got texts of shape \[batch, 2\]: pass"):
            model.predict([("a dog", "a cat")], verbose=0)
    assert single.predict(["ball and paddle game", "perl module"], verbose=0).shape == (2, 3)
    assert untasked.predict(("a dog", "a cat"), verbose=0).shape == (1, 3)  # one pair


def test_none_and_empty_batches_are_one_clear_error():
    model, _, _ = classifier(make_preprocessor())
    cases = [
        (None, TypeError, "predict got no inputs (x is None): pass the texts"),
        ([], ValueError, "predict got an empty batch: x holds no examples"),
        (([], []), ValueError, "predict got an empty batch"),
        ([None], TypeError, "predict got None at x[0], where a text (a string) goes"),
        (["a dog", None, "fox"], TypeError, "predict got None at x[1], where"),
        ((TEXTS, [*QUESTIONS[:4], None]), TypeError, "predict got None at x[1][4], where"),
        (np.array(["fox", None], object), TypeError, "predict got None at x[1], where"),
        (["a dog", 3], TypeError, "predict got 3 at x[1], where"),
        ([[2, 11, 16, 3]], TypeError, "predict got a list of numbers; a model takes texts"),
        ((1, 2), TypeError, "predict got a tuple of numbers; a model takes texts"),
        ({"text": TEXTS}, ValueError, "predict got a dict of texts (keys ['text']); a dict "
                                      "holds the model's int32 token_ids"),
        (tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string)).batch(2), ValueError,
         "predict got an empty dataset: it yields no batch of texts"),
    ]
    for x, kind, message in cases:
        with pytest.raises(kind) as error:
            model.predict(x, verbose=0)
        assert str(error.value).startswith(message), (x, str(error.value))
    with pytest.raises(TypeError, match=r"^fit got None at x\[1\], where"):
        model.fit(["a dog", None], [0, 1], verbose=0)
    with pytest.raises(ValueError, match="^evaluate got an empty batch"):
        model.evaluate([], [], verbose=0)


def test_missing_or_text_targets_are_one_clear_error():
    """Label names as targets, or no targets, failed inside Keras's loss with "None values
    not supported" (string labels were read as the second texts of pairs)."""
    model, _, _ = classifier(make_preprocessor())
    names = ["pos", "neg", "pos", "neg", "pos"]
    with pytest.raises(ValueError, match=r"^BertClassifier '\w+' got text as its targets \(y\): "
                                         r"targets are numbers"):
        model.fit(TEXTS, names, verbose=0)
    with pytest.raises(ValueError, match="got text as its targets"):
        model.evaluate(TEXTS, names, verbose=0)
    no_targets = r"^BertClassifier '\w+' got no targets \(y\) for its loss: pass them"
    for data in (tf.data.Dataset.from_tensor_slices(TEXTS).batch(2),
                 tf.data.Dataset.from_tensor_slices((TEXTS, names)).batch(2)):
        with pytest.raises(ValueError, match=no_targets):
            model.fit(data, verbose=0)
    with pytest.raises(ValueError, match=no_targets):
        model.fit(TEXTS, verbose=0)


def test_mixed_precision_model_takes_text():
    with global_dtype_policy("mixed_float16"):
        model, text, _ = classifier(make_preprocessor())
        model.fit(text, np.array([0, 2, 1, 2, 0]), batch_size=5, verbose=0)
        logits = model.predict(text, verbose=0)
    assert logits.dtype == np.float32 and np.isfinite(logits).all()
    assert all(v.dtype == tf.int32 for v in model.preprocess_text(text).values())


def test_an_in_memory_copy_keeps_the_preprocessor():
    model, text, _ = classifier(make_preprocessor())
    copy = kbc.BertClassifier.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    assert copy.preprocessor is not model.preprocessor
    np.testing.assert_allclose(copy.predict(text, verbose=0), model.predict(text, verbose=0),
                               atol=1e-6)


def saved_names_and_config(path):
    with zipfile.ZipFile(path) as archive:
        return archive.namelist(), archive.read("config.json").decode("utf-8")


ASSETS = {"wordpiece": ["vocab.txt"], "byte_pair": ["vocab.json", "merges.txt"],
          "sentencepiece": ["spiece.model"]}


@pytest.mark.parametrize("kind", list(VOCABULARIES))
def test_keras_file_holds_the_vocabulary_as_an_asset(kind, tmp_path):
    preprocessor = make_preprocessor(kind)
    model = kbc.BertSpanLabeler(make_encoder(preprocessor), preprocessor=preprocessor)
    path = tmp_path / "model.keras"
    model.save(path)
    names, config = saved_names_and_config(path)
    folder = "assets/preprocessor/tokenizer/"
    assert sorted(n for n in names if n.startswith("assets/")) == sorted(
        folder + name for name in [*ASSETS[kind], "tokenizer_config.json"])
    # Not inline: config.json holds no token of the vocabulary (but words that a model's
    # config holds anyway, e.g. the piece "name"), and its tokenizer none.
    model.preprocessor = None
    words = json.dumps(keras.saving.serialize_keras_object(model))
    model.preprocessor = preprocessor
    tokens = [json.dumps(token) for token in preprocessor.vocabulary[5:] if token][:200]
    assert tokens and not [t for t in tokens if t in config and t not in words]
    tokenizer_config = json.loads(config)["config"]["preprocessor"]["config"]["tokenizer"]
    vocabulary_keys = {"wordpiece": ["vocabulary"], "byte_pair": ["vocabulary", "merges"],
                       "sentencepiece": ["model"]}[kind]
    assert all(tokenizer_config["config"][key] is None for key in vocabulary_keys)

    loaded = keras.saving.load_model(path)
    assert type(loaded.preprocessor) is kbc.BertPreprocessor
    assert loaded.preprocessor.get_config() == preprocessor.get_config()  # inline in memory
    pairs = (QUESTIONS, TEXTS)
    assert_same_outputs(loaded.predict(pairs, verbose=0), model.predict(pairs, verbose=0))


def test_keras_file_with_the_vocabulary_inline_still_loads(tmp_path, monkeypatch):
    """Files written before the vocabulary became an asset: inline, no assets folder."""
    preprocessor = make_preprocessor()
    model, text, _ = classifier(preprocessor)
    with monkeypatch.context() as patch:
        patch.setattr(keras_internals, "_keras_global_state", None)
        model.save(tmp_path / "with_assets.keras")
    with zipfile.ZipFile(tmp_path / "with_assets.keras") as source, \
            zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for name in source.namelist():
            if not name.startswith("assets/"):
                old.writestr(name, source.read(name))
    names, config = saved_names_and_config(tmp_path / "old.keras")
    assert '"##ick"' in config and not any(n.startswith("assets/") for n in names)
    loaded = keras.saving.load_model(tmp_path / "old.keras")
    np.testing.assert_allclose(loaded.predict(text, verbose=0), model.predict(text, verbose=0),
                               atol=1e-6)


def test_a_tokenizer_without_its_asset_says_so():
    tokenizer = kbc.text.BertTokenizer(None)
    with pytest.raises(ValueError, match="has no vocabulary"):
        tokenizer(["the fox"])
    with pytest.raises(ValueError, match="holds no vocabulary for BertTokenizer"):
        tokenizer.load_assets(None)


@pytest.mark.slow  # two fits, one under the strategy
def test_fit_on_text_under_a_two_replica_strategy(two_cpu_strategy):
    """Text goes through the preprocessor in the input pipeline; the replicas get ids."""
    result = raw_text_mirrored.results(two_cpu_strategy)
    assert result["replicas"] == 2
    np.testing.assert_allclose(result["mirrored"], result["single"], rtol=1e-4)


def test_fit_traces_its_train_step_once(monkeypatch):
    # The optimizer's variables exist before the step is traced: a first trace that created
    # them would make TensorFlow trace the whole step again.
    model, text, _ = classifier(make_preprocessor())
    traces = []
    train_step = type(model).train_step
    monkeypatch.setattr(type(model), "train_step",
                        lambda self, data: traces.append(1) or train_step(self, data))
    model.fit(text, np.array([0, 1, 2, 0, 1]), batch_size=2, epochs=2, verbose=0)
    assert len(traces) == 1 and model.optimizer.iterations.numpy() == 6


def test_ids_with_no_embedding_row_are_one_clear_error():
    """Ids past the word embeddings failed inside TensorFlow's gather on a CPU (and read
    zeros on a GPU), and so did more positions than the position table."""
    pre = make_preprocessor()
    model, _, _ = classifier(pre)
    config = model.encoder.config
    features = {name: np.asarray(value) for name, value in pre(TEXTS[:2]).items()}
    assert model.predict(features, verbose=0).shape == (2, 3)  # ids in range pass

    def predict(**changes):
        with pytest.raises(ValueError) as error:
            model.predict({**features, **changes}, verbose=0)
        return str(error.value)

    ids = features["token_ids"].copy()
    ids[1, 1] = config.vocab_size
    assert predict(token_ids=ids) == (
        f"predict got token_ids holding {config.vocab_size}, but the model's word embeddings "
        f"have {config.vocab_size:,} rows (vocab_size): ids go from 0 to "
        f"{config.vocab_size - 1:,}")
    assert "token_ids holding -1" in predict(token_ids=np.where(ids == config.vocab_size, -1,
                                                                ids))
    width = config.max_sequence_length + 1
    long = {name: np.ones([1, width], "int32") for name in features}
    with pytest.raises(ValueError, match=f"^fit got token_ids of {width} positions, but the "
                                         f"model's position table covers {width - 1}"):
        model.fit(long, np.zeros([1]), verbose=0)
