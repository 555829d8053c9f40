"""Long texts as overlapping windows (`kbc.LongTextPreprocessor`): the windows and their
join, a classifier's answer as the aggregate of its windows', and one long raw text in,
one answer out (a class, a label set, tags), alike from Keras, the SavedModel and the
`.tflite` file."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.cli.predict import load_tflite
from keras_bert_core.tasks.fine_tuning import Classify, MultiLabel, Ner
from keras_bert_core.tasks.token_classification import TaggingData
from keras_bert_core.text.windows import (
    LENGTH_TIE_BREAK,
    join_windows,
    pack_windows,
    window_spans,
)
from tests.tasks.helpers import VOCAB

SEQ_LENGTH, STRIDE, MAX_WINDOWS = 16, 7, 6
TEXT_DATA = pathlib.Path(__file__).resolve().parents[1] / "text" / "data"
# Words of the test vocabulary, each one wordpiece.
FILLER = "the river flows through field and sky shone over sea".split()


def _preprocessor(**options):
    return kbc.LongTextPreprocessor(VOCAB, seq_length=SEQ_LENGTH, stride=STRIDE,
                                    max_windows=MAX_WINDOWS, static_shape=False, **options)


def _encoder(preprocessor):
    return kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=len(preprocessor.vocabulary), max_position_embeddings=SEQ_LENGTH,
        hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))


def _text(words, seed=0):
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(FILLER, size=words))


def _central_window(piece, spans):
    """SQuAD's rule, written out: the window with the most context on the piece's shorter
    side, then the longer window, then the first."""
    scores = [min(piece - start, start + length - 1 - piece) + LENGTH_TIE_BREAK * length
              if start <= piece < start + length else -1 for start, length in spans]
    return int(np.argmax(scores))


def test_windows_follow_the_spans_and_join_back_at_the_most_central_window():
    packer = kbc.BertPreprocessor(VOCAB, seq_length=SEQ_LENGTH).packer
    lengths = [0, 3, 14, 15, 40, 200]
    ids = tf.ragged.constant([list(range(100, 100 + n)) for n in lengths], tf.int32)
    windows = pack_windows(packer, ids, STRIDE, MAX_WINDOWS, static_shape=False)
    mask = windows["padding_mask"].numpy()
    for row, length in enumerate(lengths):
        spans = window_spans(length, SEQ_LENGTH - 2, STRIDE, MAX_WINDOWS)
        assert (mask[row, :, 0] > 0).sum() == len(spans), length
        for window, (start, size) in enumerate(spans):
            assert windows["token_ids"][row, window, 1:size + 1].numpy().tolist() == list(
                range(100 + start, 100 + start + size))
    # Each piece's value is the index of the window it is taken from.
    which = tf.broadcast_to(tf.range(mask.shape[1])[None, :, None], mask.shape)
    joined, text_mask = join_windows(which, windows["padding_mask"], STRIDE)
    ids_back, _ = join_windows(windows["token_ids"], windows["padding_mask"], STRIDE)
    for row, length in enumerate(lengths):
        spans = window_spans(length, SEQ_LENGTH - 2, STRIDE, MAX_WINDOWS)
        covered = spans[-1][0] + spans[-1][1]
        assert text_mask[row].numpy().sum() == covered + 2
        assert ids_back[row, 1:covered + 1].numpy().tolist() == list(range(100, 100 + covered))
        assert joined[row, 1:covered + 1].numpy().tolist() == [
            _central_window(piece, spans) for piece in range(covered)]
    # A short text is exactly BertPreprocessor's row, in one window.
    plain = kbc.BertPreprocessor(VOCAB, seq_length=SEQ_LENGTH, static_shape=False)
    short = ["the river flows", "sky"]
    long_windows, rows = _preprocessor()(short), plain(short)
    for name, value in rows.items():
        assert long_windows[name].numpy()[:, 0].tolist() == value.numpy().tolist()
    assert long_windows["token_ids"].shape[1] == 1


@pytest.mark.parametrize("vocabulary", [
    pytest.param(TEXT_DATA / "bpe" / "vocab.json", id="byte_pair"),
    pytest.param(TEXT_DATA / "sentencepiece" / "spiece.model", id="sentencepiece")])
def test_windows_of_other_tokenizers_hold_their_pieces_between_their_own_ends(vocabulary):
    """Byte-pair (RoBERTa: <s> ... </s>) and SentencePiece (ALBERT) texts window as
    WordPiece ones do: window k is the text's pieces from k * stride on, between the
    tokenizer's own first and last tokens, as the plain preprocessor packs the whole text."""
    text = " ".join(_text(60, seed=3).split()) + " Hello world, again!"
    pre = kbc.LongTextPreprocessor(str(vocabulary), seq_length=SEQ_LENGTH, stride=STRIDE,
                                   max_windows=64, static_shape=False)
    whole = kbc.BertPreprocessor(str(vocabulary), seq_length=512, static_shape=False)([text])
    row = whole["token_ids"].numpy()[0][:whole["padding_mask"].numpy()[0].sum()]
    pieces, first, last = row[1:-1], row[0], row[-1]
    spans = window_spans(len(pieces), SEQ_LENGTH - 2, STRIDE, 64)
    assert spans[-1][0] + spans[-1][1] == len(pieces) and len(spans) > 3
    windows = pre([text])
    for k, (start, size) in enumerate(spans):
        assert windows["token_ids"][0, k, :size + 2].numpy().tolist() == [
            first, *pieces[start:start + size], last], k
        assert windows["padding_mask"][0, k].numpy().sum() == size + 2
    plain = kbc.BertPreprocessor(str(vocabulary), seq_length=SEQ_LENGTH,
                                 static_shape=False)(["Hello world"])
    assert pre(["Hello world"])["token_ids"].numpy()[:, 0].tolist() == plain[
        "token_ids"].numpy().tolist()


def test_a_long_texts_answer_is_the_aggregate_of_its_windows():
    preprocessor = _preprocessor()
    encoder = _encoder(preprocessor)
    text = _text(30)  # four windows
    windows = preprocessor([text])
    count = int((windows["padding_mask"].numpy()[0, :, 0] > 0).sum())
    assert count == 4
    for mode in ("mean", "max", "attention"):
        model = kbc.BertClassifier(encoder, num_classes=3, window_aggregation=mode)
        # Each window alone, as a text of one window.
        alone = np.array([model({name: value[:, k:k + 1] for name, value in windows.items()})
                          [0] for k in range(count)])
        if mode == "mean":
            expected = alone.mean(axis=0)
        elif mode == "max":
            expected = alone.max(axis=0)
        else:
            rows = {name: value[0, :count] for name, value in windows.items()}
            scores = model.get_layer("window_aggregation").scorer(
                encoder(rows)["pooled_output"]).numpy()[:, 0]
            weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
            expected = (weights[:, None] * alone).sum(axis=0)
        np.testing.assert_allclose(model(windows)[0], expected, atol=1e-5, err_msg=mode)


def _tagger_data(seed, count):
    """Sentences of filler words with one `paris` (B-LOC) somewhere."""
    rng = np.random.default_rng(seed)
    sentences, tags = [], []
    for _ in range(count):
        words = list(rng.choice(FILLER, size=int(rng.integers(8, 40))))
        at = int(rng.integers(0, len(words) + 1))
        words.insert(at, "paris")
        sentences.append(words)
        tags.append([int(word == "paris") for word in words])
    return TaggingData(sentences, tags, ["O", "B-LOC"])


@pytest.fixture(scope="module")
def long_text_exports(tmp_path_factory):
    """A tagger trained on windows, a windowed classifier, and their exports."""
    keras_seed = tf.keras.utils.set_random_seed
    keras_seed(0)
    folder = tmp_path_factory.mktemp("long_texts")
    preprocessor = _preprocessor()
    ner = Ner({"seq_length": SEQ_LENGTH, "label_names": ["O", "B-LOC"]})
    tagger = ner.build_model(_encoder(preprocessor), preprocessor)
    dataset, _ = ner.dataset(_tagger_data(0, 64), preprocessor, 16, training=True, seed=0)
    tagger.compile(optimizer=tf.keras.optimizers.Adam(3e-3))
    tagger.fit(dataset.repeat(), steps_per_epoch=60, epochs=1, verbose=0)
    classify = Classify({"seq_length": SEQ_LENGTH, "label_names": ["a", "b", "c"],
                         "long_texts": "windows", "window_aggregation": "attention"})
    classifier = classify.build_model(_encoder(preprocessor), preprocessor)
    multilabel = MultiLabel({"seq_length": SEQ_LENGTH, "label_names": ["a", "b", "c"],
                             "long_texts": "windows", "window_aggregation": "max"})
    tagging = multilabel.build_model(_encoder(preprocessor), preprocessor)
    # Thresholds a margin away from the probabilities of the tested text: two labels of three.
    logits = tagging.predict([_text(40, seed=1)], verbose=0)[0]
    tagging.thresholds = 1 / (1 + np.exp(-logits)) + np.array([-0.05, -0.05, 0.05])
    exports = {}
    for name, model, task in (("tagger", tagger, ner), ("classifier", classifier, classify),
                              ("multilabel", tagging, multilabel)):
        labels = task.settings["label_names"]
        exports[name] = (model, task, kbc.export_saved_model(
            model, preprocessor, folder / name, label_names=labels, warmup=False),
            kbc.export_tflite(model, preprocessor, folder / f"{name}.tflite",
                              label_names=labels))
    return preprocessor, exports


def _serve(export, tflite, text):
    served = tf.saved_model.load(str(export)).signatures["serving_default"](
        text=tf.constant([text]))
    runner, _ = load_tflite(str(tflite))
    return ({name: value.numpy()[0] for name, value in served.items()},
            {name: value[0] for name, value in runner(
                text=np.array([text], dtype=object)).items()})


def test_a_text_of_five_windows_gets_one_class_from_keras_and_both_exports(long_text_exports,
                                                                          tmp_path):
    preprocessor, exports = long_text_exports
    model, task, export, tflite = exports["classifier"]
    text = _text(40, seed=1)
    assert int((preprocessor([text])["padding_mask"].numpy()[0, :, 0] > 0).sum()) == 5
    logits = model.predict([text], verbose=0)[0]
    (answer,) = task.predict(model, task.from_lines([text]))
    served, phone = _serve(export, tflite, text)
    for outputs in (served, phone):
        np.testing.assert_allclose(outputs["logits"], logits, atol=1e-4)
        assert outputs["label_name"].decode() == answer["label"]
    # A preset of it reads long texts as windows too.
    folder = tmp_path / "preset"
    kbc.save_to_preset(model, preprocessor, folder, label_names=task.settings["label_names"])
    loaded, loaded_preprocessor = kbc.from_preset(folder)
    assert loaded_preprocessor.max_windows == MAX_WINDOWS
    np.testing.assert_allclose(loaded.predict([text], verbose=0)[0], logits, atol=1e-5)


def test_a_text_of_five_windows_gets_one_label_set_from_keras_and_both_exports(
        long_text_exports):
    _, exports = long_text_exports
    model, task, export, tflite = exports["multilabel"]
    text = _text(40, seed=1)
    (answer,) = task.predict(model, task.from_lines([text]))
    assert sorted(answer["labels"]) == ["a", "b"]
    served, phone = _serve(export, tflite, text)
    for outputs in (served, phone):
        assert [name.decode() for name in outputs["label_names"] if name] == ["a", "b"]


def test_a_tagger_finds_an_entity_only_in_the_last_window(long_text_exports):
    preprocessor, exports = long_text_exports
    model, task, export, tflite = exports["tagger"]
    words = _text(40, seed=2).split() + ["paris", "sky"]
    text = " ".join(words)
    windows = preprocessor([text])["token_ids"].numpy()[0]
    paris = preprocessor.vocabulary.index("paris")
    assert [int((window == paris).any()) for window in windows] == [0, 0, 0, 0, 1]
    expected = ["B-LOC" if word == "paris" else "O" for word in words]
    (answer,) = task.predict(model, task.from_lines([text]))
    assert answer["tags"] == expected
    served, phone = _serve(export, tflite, text)
    for outputs in (served, phone):
        names = [name.decode() for name in outputs["word_tag_names"][:len(words)]]
        assert names == expected
    assert [word.decode() for word in served["words"][:len(words)]] == words
    with pytest.raises(ValueError, match="reads long texts as windows"):
        model.predict([text], verbose=0)
