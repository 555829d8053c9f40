"""Every task's served answers, checked against its Keras model (SavedModel and TFLite)."""

import importlib.util
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.export import export_tflite
from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import NUM_CHOICES, ROOT, SEQ_LENGTH, TAG_NAMES

QUESTIONS = ["Who wrote the first program?", "When was it written?", "Where?", "Why?"]
CONTEXTS = ["Ada Lovelace wrote the first computer program, for Babbage's engine.",
            "It was written in 1843, during a long and very cold winter in London.",
            b"Invalid \xff bytes \xc3 in a context.",
            ""]
TAGGED = ["Johnson & Johnson's unbelievable results", "Ada Lovelace met Babbage in 1833.", ""]


def _run(signature, **inputs):
    outputs = signature(**{name: tf.constant(value) for name, value in inputs.items()})
    return {name: value.numpy() for name, value in outputs.items()}


def _numpy(x):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, x)


def _best_span(start_logits, end_logits, segment_ids, padding_mask, max_length=30):
    """Brute force: the best (score, start, end) over context tokens, or None."""
    context = [i for i in range(len(segment_ids) - 1)
               if segment_ids[i] == segment_ids[i + 1] == 1 and padding_mask[i + 1]]
    spans = [(start_logits[i] + end_logits[j], i, j)
             for i in context for j in context if 0 <= j - i < max_length]
    return max(spans) if spans else None


def test_pairs_classifier_reads_text_a_and_text_b(task_models, task_signatures, preprocessor):
    a = ["A man is playing a guitar.", "Nobody came."]
    b = ["Someone performs music on a stage.", "The room was full of early guests."]
    signature = task_signatures["pairs"]["serving_default"]
    assert sorted(signature.structured_input_signature[1]) == ["text_a", "text_b"]
    served = _run(signature, text_a=a, text_b=b)
    logits = task_models["pairs"](preprocessor((a, b), static_shape=False), training=False)
    np.testing.assert_allclose(served["probabilities"], _numpy(keras.ops.softmax(logits)),
                               atol=1e-5)


def test_span_labeler_answers_with_the_best_context_span(task_models, task_signatures,
                                                         preprocessor):
    served = _run(task_signatures["qa"]["serving_default"], question=QUESTIONS,
                  context=CONTEXTS)
    tokenizer = preprocessor.tokenizer
    pieces, starts, ends = tokenizer.tokenize_with_offsets(CONTEXTS)
    features = preprocessor.packer((tokenizer(QUESTIONS), pieces), static_shape=False)
    logits = _numpy(task_models["qa"](features, training=False))
    np.testing.assert_allclose(served["start_logits"], logits["start_logits"], atol=1e-5)
    features = _numpy(features)
    for row, context in enumerate(CONTEXTS):
        context = context if isinstance(context, bytes) else context.encode()
        best = _best_span(logits["start_logits"][row], logits["end_logits"][row],
                          features["segment_ids"][row], features["padding_mask"][row])
        start, end = served["start_index"][row], served["end_index"][row]
        if best is None:  # no context: the null answer
            assert (start, end, served["answer"][row]) == (0, 0, b"")
            null = logits["start_logits"][row, 0] + logits["end_logits"][row, 0]
            np.testing.assert_allclose(served["score"][row], null, rtol=1e-5)
            continue
        assert (start, end) == best[1:]
        np.testing.assert_allclose(served["score"][row], best[0], rtol=1e-5)
        first = features["segment_ids"][row].argmax()
        begin, stop = starts[row][start - first], ends[row][end - first]
        assert (served["answer_start"][row], served["answer_end"][row]) == (begin, stop)
        assert served["answer"][row] == context[begin:stop] != b""
    from_ids = _run(task_signatures["qa"]["predict_ids"], **features)
    np.testing.assert_array_equal(from_ids["start_index"], served["start_index"])
    empty = _run(task_signatures["qa"]["serving_default"], question=np.array([], object),
                 context=np.array([], object))
    assert empty["answer"].shape == empty["score"].shape == (0,)


def test_token_classifier_tags_wordpieces_and_words(task_models, task_signatures,
                                                    preprocessor):
    served = _run(task_signatures["tagger"]["serving_default"], text=TAGGED)
    features = preprocessor(TAGGED, static_shape=False)
    tags = _numpy(task_models["tagger"](features, training=False)).argmax(-1)
    real = _numpy(features["padding_mask"]) > 0
    np.testing.assert_array_equal(served["tags"][real], tags[real])
    assert [t.decode() for t in served["tokens"][0][:4]] == ["[CLS]", "johnson", "&", "johnson"]
    for row, text in enumerate(TAGGED):
        words = re.findall(r"\w+|[^\w\s]", text)
        assert [w.decode() for w in served["words"][row][:len(words)]] == words
        assert not served["words"][row][len(words):].any()
        starts = np.flatnonzero(served["word_start"][row])
        assert len(starts) == len(words)
        np.testing.assert_array_equal(served["word_tags"][row][:len(words)],
                                      served["tags"][row][starts])
        assert (served["word_tags"][row][len(words):] == -1).all()
        assert [n.decode() for n in served["word_tag_names"][row][:len(words)]] == [
            TAG_NAMES[t] for t in served["word_tags"][row][:len(words)]]
    assert len(re.findall(r"\w+|[^\w\s]", TAGGED[0])) < (served["tokens"][0] != b"[PAD]").sum()
    broken = _run(task_signatures["tagger"]["serving_default"], text=[b"caf\xc3 \xff ok"])
    assert [w for w in broken["words"][0] if w] == [b"caf", b"ok"]


def test_multiple_choice_scores_every_choice(task_models, task_signatures, preprocessor):
    text = ["The cat sat on the mat.", "It started to rain."]
    choices = [["Then it slept.", "Then it flew to the moon.", "It barked."],
               ["We opened umbrellas.", "The sun dried us at once.", ""]]
    served = _run(task_signatures["choice"]["serving_default"], text=text, choices=choices)
    rows = preprocessor((np.repeat(text, NUM_CHOICES), np.reshape(choices, [-1])),
                        static_shape=False)
    features = {name: keras.ops.reshape(x, (2, NUM_CHOICES, -1)) for name, x in rows.items()}
    logits = _numpy(task_models["choice"](features, training=False))
    np.testing.assert_allclose(served["logits"], logits, atol=1e-5)
    np.testing.assert_array_equal(served["label"], logits.argmax(-1))


def test_encoder_serves_pooled_and_mean_embeddings(task_models, task_signatures, preprocessor):
    texts = ["A short one.", "A somewhat longer sentence, with a comma and 3 digits: 123."]
    served = _run(task_signatures["embedder"]["serving_default"], text=texts)
    features = _numpy(preprocessor(texts, static_shape=False))
    outputs = _numpy(task_models["embedder"](features, training=False))
    np.testing.assert_allclose(served["pooled_output"], outputs["pooled_output"], atol=1e-5)
    mask = features["padding_mask"][:, :, None]
    mean = (outputs["sequence_output"] * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(served["mean_embedding"], mean, atol=1e-5)


@pytest.fixture(scope="module")
def runner():
    """export/run_tflite.py, the interpreter runner an app copies."""
    if importlib.util.find_spec("ai_edge_litert") is None:
        pytest.skip("ai-edge-litert is not installed (pip install ai-edge-litert)")
    spec = importlib.util.spec_from_file_location("run_tflite", ROOT / "export" / "run_tflite.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


@pytest.mark.slow
def test_tflite_tasks_match_the_saved_model(task_models, task_signatures, preprocessor,
                                            runner, tmp_path):
    # Texts on which the TFLite-compatible tokenizer agrees with the reference one.
    tflite_preprocessor = BertPreprocessor(preprocessor.vocabulary, SEQ_LENGTH,
                                           tflite_compatible=True)
    questions, contexts = QUESTIONS[:2], CONTEXTS[:2]
    np.testing.assert_array_equal(tflite_preprocessor(contexts)["token_ids"],
                                  preprocessor(contexts)["token_ids"])

    qa = runner.load(export_tflite(task_models["qa"], preprocessor, tmp_path / "qa.tflite"))
    on_device = runner.run(qa, {"question": questions, "context": contexts})
    served = _run(task_signatures["qa"]["serving_default"], question=questions,
                  context=contexts)
    # The answer's byte offsets too: a phone app cuts the answer from the context itself.
    assert (on_device["answer_end"] > on_device["answer_start"]).all()
    for name in ("start_index", "end_index", "answer_start", "answer_end"):
        np.testing.assert_array_equal(on_device[name], served[name])
    np.testing.assert_allclose(on_device["score"], served["score"], atol=1e-4)

    tagger = runner.load(export_tflite(task_models["tagger"], preprocessor,
                                       tmp_path / "tagger.tflite", label_names=TAG_NAMES))
    on_device = runner.run(tagger, {"text": TAGGED})
    served = _run(task_signatures["tagger"]["serving_default"], text=TAGGED)
    width = served["tags"].shape[1]
    for name in ("tags", "word_start", "tag_names", "word_begin", "word_end", "word_tags",
                 "word_tag_names"):
        np.testing.assert_array_equal(on_device[name][:, :width], served[name], err_msg=name)
    # The words, cut by the app from the text's bytes.
    for row, text in enumerate(TAGGED):
        raw = text.encode()
        words = [raw[b:e] for b, e in zip(on_device["word_begin"][row],
                                         on_device["word_end"][row], strict=True) if e > b]
        assert words == [w for w in served["words"][row] if w]


@pytest.mark.slow
def test_int8_span_labeler_keeps_its_logits(task_models, task_signatures, preprocessor,
                                            runner, tmp_path):
    # The padding's penalty (-1e9) once shared the logits' int8 scale, which rounded
    # every logit to 0: every answer was the first context token, whatever the model.
    calibration = [{"question": q, "context": c} for q in QUESTIONS for c in CONTEXTS[:2]]
    qa = runner.load(export_tflite(task_models["qa"], preprocessor, tmp_path / "qa.tflite",
                                   quantize="int8", calibration_texts=calibration))
    questions, contexts = QUESTIONS[:2], CONTEXTS[:2]
    on_device = runner.run(qa, {"question": questions, "context": contexts})
    served = _run(task_signatures["qa"]["serving_default"], question=questions,
                  context=contexts)
    real = served["start_logits"] > -1e8
    for name in ("start_logits", "end_logits"):
        expected, got = served[name][real], on_device[name][:, :real.shape[1]][real]
        assert np.abs(expected).max() > 0
        # int8 rounds each logit, and clips those past the calibration's range (the shared
        # models' logits differ with the tests run before): they follow the float logits.
        assert np.corrcoef(got, expected)[0, 1] > 0.9, (name, got, expected)


def test_inputs_that_disagree_in_rows_or_width_are_refused(task_signatures):
    # TF Serving does not check a request against the signature's shapes: a columnar
    # request with one text_b for three text_a was answered with that text_b paired with
    # each; two choices for a model of three failed deep in the packer.
    refused = [
        ("pairs", "serving_default", {"text_a": ["a", "b", "c"], "text_b": ["x"]},
         "inputs text_a and text_b must hold the same number of rows"),
        ("pairs", "tokenize", {"text_a": ["a"], "text_b": ["x", "y"]},
         "inputs text_a and text_b must hold the same number of rows"),
        ("qa", "serving_default", {"question": ["who?", "what?"], "context": ["Ada."]},
         "inputs context and question must hold the same number of rows"),
        ("choice", "serving_default", {"text": ["a"], "choices": [["x"] * (NUM_CHOICES - 1)]},
         f"input choices must have shape [batch, {NUM_CHOICES}]"),
        ("choice", "serving_default", {"text": ["a", "b"], "choices": [["x"] * NUM_CHOICES]},
         "inputs choices and text must hold the same number of rows"),
        ("classifier", "predict_ids", {"token_ids": [[101, 102]], "segment_ids": [[0, 0]],
                                       "padding_mask": [[1, 1, 0]]},
         "inputs padding_mask and segment_ids must have the same shape"),
        ("choice", "predict_ids", {name: np.zeros([1, NUM_CHOICES - 1, 4], np.int32)
                                   for name in ("token_ids", "segment_ids", "padding_mask")},
         f"input padding_mask must have shape [batch, {NUM_CHOICES}, ?]"),
    ]
    for model, signature, inputs, message in refused:
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
            _run(task_signatures[model][signature], **inputs)
