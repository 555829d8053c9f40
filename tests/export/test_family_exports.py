"""Exports of the BERT family's preprocessors (issue 21): RoBERTa's byte-level BPE serves raw
text from a SavedModel and ids from TFLite (its tokenizer's ops have no TFLite kernels);
ALBERT's SentencePiece serves raw text from both; each tokenizer's files travel as assets
that rebuild it."""

import importlib.util
import pathlib
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.export import (
    export_saved_model,
    export_tflite,
    saved_model_op_types,
    tflite_op_types,
    unsupported_tf_serving_ops,
    unsupported_tflite_ops,
)
from keras_bert_core.export.tflite import BPE_TFLITE_BLOCKING_OPS
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.text.byte_pair import pretokenization
from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import ROOT

BPE_DIR = ROOT / "tests" / "text" / "data" / "bpe"
SPIECE = ROOT / "tests" / "text" / "data" / "sentencepiece" / "spiece.model"
SEQ_LENGTH = 32
TEXTS = ["A man is playing a guitar.", "Hello world!", "",
         "Someone performs music on a stage in front of a large audience, for hours."]
PAIRS = (TEXTS[:2], TEXTS[2:])


@pytest.fixture(scope="module")
def bpe_preprocessor():
    return BertPreprocessor(str(BPE_DIR / "vocab.json"), seq_length=SEQ_LENGTH)


def tiny_classifier(preprocessor, name):
    keras.utils.set_random_seed(3)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH)
    return BertClassifier(kbc.BertEncoder(config), num_classes=2, dropout=0.0, name=name)


@pytest.fixture(scope="module")
def bpe_classifier(bpe_preprocessor):
    return tiny_classifier(bpe_preprocessor, "roberta_like")


@pytest.fixture(scope="module")
def spm_preprocessor():
    return BertPreprocessor(SPIECE, seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def spm_classifier(spm_preprocessor):
    return tiny_classifier(spm_preprocessor, "albert_like")


def probabilities(model, features):
    return keras.ops.convert_to_numpy(keras.ops.softmax(model(features, training=False)))


@pytest.fixture(scope="module")
def bpe_export(bpe_classifier, bpe_preprocessor, tmp_path_factory):
    """One SavedModel of the BPE classifier (single texts: the pairs' packing is the
    preprocessor's, checked against Hugging Face in tests/text), loaded once: the BPE
    tokenizer's graph takes long to trace, load and optimize on the first call."""
    base = tmp_path_factory.mktemp("bpe_saved_model")
    export_dir = export_saved_model(bpe_classifier, bpe_preprocessor, base / "export",
                                    warmup=False)
    return base, export_dir, tf.saved_model.load(export_dir)


def test_bpe_saved_model_serves_raw_text(bpe_export, bpe_classifier, bpe_preprocessor):
    _, _, loaded = bpe_export
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    logits = bpe_classifier(bpe_preprocessor(TEXTS, static_shape=False), training=False)
    np.testing.assert_allclose(served["probabilities"], keras.ops.softmax(logits), atol=1e-5)


def test_bpe_saved_model_holds_its_files_as_assets_and_only_serving_ops(
        bpe_export, bpe_preprocessor):
    base, export_dir, loaded = bpe_export
    assets = pathlib.Path(export_dir) / "assets"
    assert sorted(p.name for p in assets.iterdir()) == [
        "merges.txt", "tokenizer_config.json", "vocab.json"]
    assert pathlib.Path(loaded.vocab_file.asset_path.numpy().decode()) == assets / "vocab.json"
    assert pathlib.Path(loaded.merges_file.asset_path.numpy().decode()) == assets / "merges.txt"
    for path in [pathlib.Path(export_dir) / "saved_model.pb",
                 *(pathlib.Path(export_dir) / "variables").iterdir()]:
        assert str(base).encode() not in path.read_bytes(), path
    # The assets folder rebuilds the same preprocessor.
    rebuilt = BertPreprocessor(assets, seq_length=SEQ_LENGTH, name=bpe_preprocessor.name)
    assert rebuilt.get_config() == bpe_preprocessor.get_config()
    op_types = saved_model_op_types(export_dir)
    assert {"RegexSplitWithOffsets", "LookupTableFindV2", "BatchMatMulV2"} <= op_types
    assert unsupported_tf_serving_ops(op_types) == set()


def test_bpe_tflite_takes_ids_and_refuses_text_naming_the_ops(
        bpe_classifier, bpe_preprocessor, tmp_path):
    with pytest.raises(ValueError, match=r"inputs='ids'.*") as error:
        export_tflite(bpe_classifier, bpe_preprocessor, tmp_path / "text.tflite")
    assert "RegexSplitWithOffsets" in str(error.value)
    assert not (tmp_path / "text.tflite").exists()
    path = export_tflite(bpe_classifier, bpe_preprocessor, tmp_path / "ids.tflite",
                         inputs="ids", pairs=True)
    op_types = tflite_op_types(pathlib.Path(path).read_bytes())
    assert unsupported_tflite_ops(op_types) == set() and "FULLY_CONNECTED" in op_types
    if importlib.util.find_spec("ai_edge_litert") is None:
        pytest.skip("ai-edge-litert is not installed: the .tflite file is not run")
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner("predict_ids")
    # RoBERTa's pair layout: <s> A </s></s> B </s>, one token type.
    features = bpe_preprocessor(PAIRS, static_shape=False)
    assert features["token_ids"][0].numpy().tolist().count(2) == 3
    assert not features["segment_ids"].numpy().any()
    on_device = runner(**{name: value.numpy() for name, value in features.items()})
    logits = bpe_classifier(features, training=False)
    np.testing.assert_allclose(on_device["probabilities"], keras.ops.softmax(logits),
                               atol=1e-5)


def test_bpe_tokenizer_converts_only_with_ops_tflite_lacks(bpe_preprocessor):
    """The claim behind the refusal: converted alone, BytePairTokenizer leaves every op of
    BPE_TFLITE_BLOCKING_OPS, none of which TFLite or tf.text's registrar provides."""
    tokenizer = bpe_preprocessor.tokenizer
    module = tf.Module()
    module.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize(text):
        # One route of the tokenizer (texts of any script), not the routing between two:
        # the same ops, a sixth of the graph to convert.
        ids = tokenizer._tokenize_rows(text, pretokenization.GPT2_PRETOKEN_PATTERN,
                                       with_offsets=False)[0]
        return {"values": ids.values, "row_splits": ids.row_splits}

    with tempfile.TemporaryDirectory() as saved_model_dir:
        tf.saved_model.save(module, saved_model_dir,
                            signatures=tokenize.get_concrete_function())
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # so that it lists them rather than fails
        unsupported = unsupported_tflite_ops(tflite_op_types(converter.convert()))
    assert set(BPE_TFLITE_BLOCKING_OPS) <= unsupported


def test_sentencepiece_saved_model_serves_raw_text_with_its_model_as_an_asset(
        spm_classifier, spm_preprocessor, tmp_path):
    export_dir = export_saved_model(spm_classifier, spm_preprocessor, tmp_path / "export",
                                    warmup=False)
    assets = pathlib.Path(export_dir) / "assets"
    assert sorted(p.name for p in assets.iterdir()) == ["spiece.model",
                                                       "tokenizer_config.json"]
    assert (assets / "spiece.model").read_bytes() == SPIECE.read_bytes()
    rebuilt = BertPreprocessor(assets, seq_length=SEQ_LENGTH)
    assert (rebuilt.tokenizer_kind, rebuilt.lower_case, rebuilt.tokenizer.keep_accents) == (
        "sentencepiece", True, False)
    op_types = saved_model_op_types(export_dir)
    assert "TFText>FastSentencepieceTokenize" in op_types  # the sentencepiece library's ids
    assert unsupported_tf_serving_ops(op_types) == set()
    for path in [pathlib.Path(export_dir) / "saved_model.pb",
                 *(pathlib.Path(export_dir) / "variables").iterdir()]:
        assert str(tmp_path).encode() not in path.read_bytes(), path
    served = tf.saved_model.load(export_dir).signatures["serving_default"](
        text=tf.constant(TEXTS))
    np.testing.assert_allclose(
        served["probabilities"],
        probabilities(spm_classifier, spm_preprocessor(TEXTS, static_shape=False)), atol=1e-5)


def test_sentencepiece_tflite_takes_raw_text(spm_classifier, spm_preprocessor, tmp_path):
    # Texts are cut to max_text_bytes inside the file, as the SavedModel cuts them.
    path = export_tflite(spm_classifier, spm_preprocessor, tmp_path / "albert.tflite",
                         max_text_bytes=40)
    op_types = tflite_op_types(pathlib.Path(path).read_bytes())
    assert "TFText>FastSentencepieceTokenize" in op_types
    assert unsupported_tflite_ops(op_types) == set()
    if importlib.util.find_spec("ai_edge_litert") is None:
        pytest.skip("ai-edge-litert is not installed: the .tflite file is not run")
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    interpreter = InterpreterWithCustomOps(
        model_path=str(path), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    runner = interpreter.get_signature_runner("serving_default")
    tflite_preprocessor = spm_preprocessor.with_options(tflite_compatible=True)
    for text in [*TEXTS, "Über 40 Bytes: café, naïve, €uros — and more words after them."]:
        on_device = runner(text=np.array([text.encode()], dtype=object))
        cut = text.encode()[:40].decode("utf-8", errors="ignore")  # at a character boundary
        expected = probabilities(spm_classifier,
                                 tflite_preprocessor([cut], static_shape=False))
        np.testing.assert_allclose(on_device["probabilities"], expected, atol=1e-5,
                                   err_msg=text)


@pytest.mark.slow  # two SavedModels and two TFLite conversions
def test_sentencepiece_span_and_tagging_tflite_answer_as_the_saved_model(spm_preprocessor,
                                                                         tmp_path):
    """ALBERT's span labeler and token classifier in .tflite files (raw text in): their
    answers' and words' byte offsets are the SavedModel's, on texts that ALBERT's
    preprocessing and the model's normalizer change (spaces, quotes, accents, Hangul,
    full-width and compatibility characters)."""
    litert = pytest.importorskip("ai_edge_litert.interpreter", reason="LiteRT interpreter")
    from tensorflow_text import tflite_registrar

    keras.utils.set_random_seed(5)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(spm_preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH)
    encoder = kbc.BertEncoder(config)
    questions = ["Who finished the tower?", "Où est le café ?", "누가?", "What?"]
    contexts = ["Gustave  Eiffel finished ``the tower'' in 1889.",
                "Le café « naïve » est à Paris, près de l’Opéra.",
                "한국어 텍스트와 ＡＢＣ１２３ ﬁne ①",
                ""]
    tagged = ["Gustave Eiffel’s  TOWER, 1889!", "Crème brûlée ﬁnale ½", "서울 ＴＯＫＹＯ"]
    cases = [("qa", BertSpanLabeler(encoder), {}, {"question": questions, "context": contexts},
              ("start_index", "end_index", "answer_start", "answer_end")),
             ("tagger", BertTokenClassifier(encoder, num_classes=3, dropout=0.0),
              {"label_names": ["O", "B", "I"]}, {"text": tagged},
              ("tags", "word_start", "word_begin", "word_end", "word_tags"))]
    for name, model, options, inputs, compared in cases:
        export_dir = export_saved_model(model, spm_preprocessor, tmp_path / name,
                                        warmup=False, **options)
        served = {key: value.numpy() for key, value in tf.saved_model.load(
            export_dir).signatures["serving_default"](**{
                key: tf.constant(value) for key, value in inputs.items()}).items()}
        path = export_tflite(model, spm_preprocessor, tmp_path / f"{name}.tflite", **options)
        op_types = tflite_op_types(pathlib.Path(path).read_bytes())
        assert unsupported_tflite_ops(op_types) == set()
        runner = litert.InterpreterWithCustomOps(
            model_path=str(path), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS
        ).get_signature_runner("serving_default")
        on_device = runner(**{key: np.array([v.encode() for v in value], dtype=object)
                              for key, value in inputs.items()})
        for key in compared:  # the tagger's rows are padded to the .tflite's width
            np.testing.assert_array_equal(on_device[key][..., :served[key].shape[-1]],
                                          served[key], err_msg=f"{name}: {key}")
        if name == "qa":
            assert (served["answer_end"] > served["answer_start"])[:3].all()
            for row, context in enumerate(contexts):
                begin, end = on_device["answer_start"][row], on_device["answer_end"][row]
                assert context.encode()[begin:end] == served["answer"][row]
        else:
            for row, text in enumerate(tagged):
                words = [text.encode()[b:e] for b, e in zip(
                    on_device["word_begin"][row], on_device["word_end"][row], strict=True)
                    if e > b]
                assert words == [w for w in served["words"][row] if w]
                assert [w.decode() for w in words] == text.split()  # SentencePiece's words
