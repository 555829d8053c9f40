"""Shared export fixtures: a real vocabulary, a briefly trained tiny classifier, its exports."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.export import export_saved_model, export_tflite
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import (
    LABEL_NAMES,
    NUM_CHOICES,
    SEQ_LENGTH,
    TAG_NAMES,
    rule_label,
    varied_texts,
)
from tests.helpers import built_once


@pytest.fixture(scope="session")
def preprocessor(vocab_file):
    return BertPreprocessor(str(vocab_file), seq_length=SEQ_LENGTH)


@pytest.fixture(scope="session")
def classifier(preprocessor, tmp_path_factory):
    """A one-layer tiny classifier trained a few steps on `rule_label`, so its logits have
    margins; trained by one pytest-xdist worker, whose weights the others load."""
    keras.utils.set_random_seed(0)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH, num_layers=1,
                                   dropout=0.0, attention_dropout=0.0)
    model = BertClassifier(kbc.BertEncoder(config), num_classes=3, dropout=0.0,
                           name="rule_classifier")
    texts = varied_texts(256, seed=1)
    features = {name: value.numpy() for name, value in preprocessor(texts).items()}

    def train(folder):
        model.compile(optimizer=keras.optimizers.Adam(2e-3))
        model.fit(features, np.array([rule_label(t) for t in texts]), batch_size=32,
                  epochs=6, verbose=0)
        folder.mkdir()
        np.savez(folder / "weights.npz", *model.get_weights())  # not the optimizer's

    model({name: value[:1] for name, value in features.items()})  # built, to load into
    with np.load(built_once(tmp_path_factory, "rule_classifier", train) / "weights.npz") as f:
        model.set_weights([f[f"arr_{i}"] for i in range(len(f.files))])
    return model


def _saved_models_once(tmp_path_factory, folder, models, preprocessor, options):
    """SavedModels of `models` (by name) in the TF Serving layout `<folder>/<name>/1/`,
    exported by one pytest-xdist worker and read by the others: their directories by name."""
    def export(base):
        for name, model in models.items():
            export_saved_model(model, preprocessor, base, name=name, **options.get(name, {}))

    base = built_once(tmp_path_factory, folder, export)
    return {name: str(base / name / "1") for name in models}


@pytest.fixture(scope="session")
def classifier_export(classifier, preprocessor, tmp_path_factory):
    return _saved_models_once(tmp_path_factory, "classifier_export",
                              {"classifier": classifier}, preprocessor,
                              {"classifier": {"label_names": LABEL_NAMES}})["classifier"]


@pytest.fixture(scope="session")
def classifier_tflite(classifier, preprocessor, tmp_path_factory):
    """The classifier's float32 `.tflite` file, raw text in: converted once for every test."""
    folder = built_once(tmp_path_factory, "classifier_tflite", lambda folder: export_tflite(
        classifier, preprocessor, folder / "classifier.tflite", label_names=LABEL_NAMES))
    return folder / "classifier.tflite"


@pytest.fixture(scope="session")
def task_models(preprocessor):
    """Random task models on one encoder, by the name they are served under. Smaller than
    "tiny" (their checks, served against Keras, hold at any size): less to trace and save."""
    keras.utils.set_random_seed(1)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH, num_layers=1,
                                   hidden_size=32, num_heads=2, intermediate_size=64)
    encoder = kbc.BertEncoder(config)
    return {
        "pairs": BertClassifier(encoder, num_classes=2, dropout=0.0),
        "qa": BertSpanLabeler(encoder),
        "tagger": BertTokenClassifier(encoder, num_classes=len(TAG_NAMES), dropout=0.0),
        "choice": BertMultipleChoice(encoder, num_choices=NUM_CHOICES, dropout=0.0),
        "embedder": encoder,
    }


@pytest.fixture(scope="session")
def task_exports(task_models, preprocessor, tmp_path_factory, classifier_export):
    """SavedModel directories of every served model (the classifier's included), by name.
    The workers' task models are equal (the same seed), so one worker's exports serve all."""
    options = {"pairs": {"pairs": True}, "tagger": {"label_names": TAG_NAMES}}
    return {"classifier": classifier_export, **_saved_models_once(
        tmp_path_factory, "task_exports", task_models, preprocessor, options)}


@pytest.fixture(scope="session")
def task_signatures(task_exports, classifier_signatures):
    """The loaded signatures of every served model, by model name."""
    return {name: classifier_signatures if name == "classifier"
            else tf.saved_model.load(path).signatures for name, path in task_exports.items()}


@pytest.fixture(scope="session")
def classifier_signatures(classifier_export):
    """The loaded classifier export's signatures, by name."""
    return tf.saved_model.load(classifier_export).signatures
