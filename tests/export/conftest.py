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


@pytest.fixture(scope="session")
def preprocessor(vocab_file):
    return BertPreprocessor(str(vocab_file), seq_length=SEQ_LENGTH)


@pytest.fixture(scope="session")
def classifier(preprocessor):
    """A tiny classifier trained a few steps on `rule_label`, so its logits have margins."""
    keras.utils.set_random_seed(0)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH, dropout=0.0,
                                   attention_dropout=0.0)
    model = BertClassifier(kbc.BertEncoder(config), num_classes=3, dropout=0.0,
                           name="rule_classifier")
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    texts = varied_texts(256, seed=1)
    features = {name: value.numpy() for name, value in preprocessor(texts).items()}
    model.fit(features, np.array([rule_label(t) for t in texts]), batch_size=32, epochs=6,
              verbose=0)
    return model


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    """A TF Serving model base directory: `<models_dir>/<name>/<version>/`."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def classifier_export(classifier, preprocessor, models_dir):
    return export_saved_model(classifier, preprocessor, models_dir, name="classifier",
                              label_names=LABEL_NAMES)


@pytest.fixture(scope="session")
def classifier_tflite(classifier, preprocessor, tmp_path_factory):
    """The classifier's float32 `.tflite` file, raw text in: converted once for every test."""
    return export_tflite(classifier, preprocessor,
                         tmp_path_factory.mktemp("tflite") / "classifier.tflite",
                         label_names=LABEL_NAMES)


@pytest.fixture(scope="session")
def task_models(preprocessor):
    """Random task models on one tiny encoder, by the name they are served under."""
    keras.utils.set_random_seed(1)
    config = kbc.BertConfig.preset("tiny", vocab_size=len(preprocessor.vocabulary),
                                   max_position_embeddings=SEQ_LENGTH)
    encoder = kbc.BertEncoder(config)
    return {
        "pairs": BertClassifier(encoder, num_classes=2, dropout=0.0),
        "qa": BertSpanLabeler(encoder),
        "tagger": BertTokenClassifier(encoder, num_classes=len(TAG_NAMES), dropout=0.0),
        "choice": BertMultipleChoice(encoder, num_choices=NUM_CHOICES, dropout=0.0),
        "embedder": encoder,
    }


@pytest.fixture(scope="session")
def task_exports(task_models, preprocessor, models_dir, classifier_export):
    """SavedModel directories of every served model (the classifier's included), by name."""
    options = {"pairs": {"pairs": True}, "tagger": {"label_names": TAG_NAMES}}
    exports = {name: export_saved_model(model, preprocessor, models_dir, name=name,
                                        **options.get(name, {}))
               for name, model in task_models.items()}
    return {"classifier": classifier_export, **exports}


@pytest.fixture(scope="session")
def task_signatures(task_exports, classifier_signatures):
    """The loaded signatures of every served model, by model name."""
    return {name: classifier_signatures if name == "classifier"
            else tf.saved_model.load(path).signatures for name, path in task_exports.items()}


@pytest.fixture(scope="session")
def classifier_signatures(classifier_export):
    """The loaded classifier export's signatures, by name."""
    return tf.saved_model.load(classifier_export).signatures
