"""Every task model on XLM-RoBERTa's checkpoint and tokenizer: multilingual raw text in, the
outputs of the packed ids. (Its `.keras` file, with `sentencepiece.bpe.model` as an asset, is
written and read by tests/cli/test_xlm_roberta.py.)"""

import os
import warnings

import keras
import numpy as np

import keras_bert_core as kbc

XLM_ROBERTA = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                           "xlm_roberta", "mlm")
TEXTS = ["Das Haus ist rot.", "La maison est rouge.", "Дом красный.", "家は赤いです。"]
QUESTIONS = ["Welche Farbe?", "Quelle couleur ?", "Какого цвета?", "何色ですか？"]


def test_every_task_model_takes_multilingual_text():
    with warnings.catch_warnings():  # a masked-LM checkpoint has no pooler
        warnings.simplefilter("ignore")
        encoder, _ = kbc.load_checkpoint(XLM_ROBERTA)
    preprocessor = kbc.BertPreprocessor(XLM_ROBERTA, seq_length=32)
    choices = [[text, question] for text, question in zip(TEXTS, QUESTIONS, strict=True)]
    keras.utils.set_random_seed(0)
    cases = {
        "classifier": (kbc.BertClassifier(encoder, 3, dropout=0.0), (QUESTIONS, TEXTS)),
        "span labeler": (kbc.BertSpanLabeler(encoder), (QUESTIONS, TEXTS)),
        "tagger": (kbc.BertTokenClassifier(encoder, 4, dropout=0.0), TEXTS),
        "multiple choice": (kbc.BertMultipleChoice(encoder, 2, dropout=0.0),
                            (QUESTIONS, choices)),
        "embedder": (kbc.BertEmbedder(encoder), TEXTS),
    }
    for name, (model, text) in cases.items():
        model.preprocessor = preprocessor
        outputs = model.predict(text, verbose=0)
        expected = model(model.preprocess_text(text, static_shape=True), training=False)
        for a, b in zip(keras.tree.flatten(outputs), keras.tree.flatten(expected),
                        strict=True):
            assert np.isfinite(a).all(), name
            np.testing.assert_allclose(a, keras.ops.convert_to_numpy(b), atol=2e-5,
                                       err_msg=name)
