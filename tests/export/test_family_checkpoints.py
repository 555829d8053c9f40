"""Each family's Hugging Face checkpoint, fine-tuned layout, exported end to end: the
SavedModel served by a process without Keras or keras_bert_core gives Keras' outputs, and
the TFLite file in LiteRT gives the SavedModel's (raw text in for ALBERT and DistilBERT,
token ids for RoBERTa, whose tokenizer has no TFLite kernels)."""

import json
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.export import export_saved_model, export_tflite
from tests.export.helpers import ROOT
from tests.export.test_saved_model import _SERVE_IN_FRESH_PROCESS

FAMILIES = ROOT / "tests" / "checkpoints" / "data" / "families"
FAMILY_NAMES = ["roberta", "albert", "distilbert"]
TEXTS = ["A man is playing a guitar.", "Café au lait, naïve résumé!",
         "The tower was finished in 1889 by Gustave Eiffel for the world fair.",
         "Hello   world\tagain", "東京は日本の首都です。"]


def _keras_probabilities(model, preprocessor, texts):
    logits = model(preprocessor(texts, static_shape=False), training=False)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits))


@pytest.fixture(scope="module")
def served_families(tmp_path_factory):
    """Each family's classifier, preprocessor, SavedModel and what one fresh process (no
    Keras, no keras_bert_core) served from it, by family: one process serves the three
    exports, as it would serve one."""
    tmp_path = tmp_path_factory.mktemp("families")
    families, arguments = {}, []
    for family in FAMILY_NAMES:
        folder = FAMILIES / f"{family}_classifier"
        # Seeded first: the loader initializes what a checkpoint lacks (RoBERTa's pooler).
        keras.utils.set_random_seed(0)
        encoder, _ = kbc.load_checkpoint(folder)
        model = kbc.BertClassifier(encoder, num_classes=3, dropout=0.0)
        preprocessor = kbc.BertPreprocessor(folder, seq_length=64)
        export_dir = export_saved_model(model, preprocessor, tmp_path / family, warmup=False)
        families[family] = model, preprocessor, tmp_path / f"{family}.npz"
        arguments += [export_dir, str(tmp_path / f"{family}.npz")]
    (tmp_path / "texts.json").write_text(json.dumps(TEXTS))
    result = subprocess.run(
        [sys.executable, "-c", _SERVE_IN_FRESH_PROCESS, str(tmp_path / "texts.json"),
         *arguments], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return {family: (model, preprocessor, np.load(outputs, allow_pickle=True))
            for family, (model, preprocessor, outputs) in families.items()}


@pytest.mark.slow  # three SavedModels served in a fresh process, three TFLite conversions
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_checkpoint_serves_from_saved_model_and_tflite(family, served_families, tmp_path):
    model, preprocessor, served = served_families[family]
    np.testing.assert_allclose(served["probabilities"],
                               _keras_probabilities(model, preprocessor, TEXTS), atol=1e-5)

    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    if family == "roberta":
        path = export_tflite(model, preprocessor, tmp_path / "model.tflite", inputs="ids")
        runner = InterpreterWithCustomOps(model_path=str(path)).get_signature_runner(
            "predict_ids")
        features = preprocessor(TEXTS, static_shape=False)
        on_device = [runner(**{name: np.asarray(value)[i:i + 1]
                               for name, value in features.items()})["probabilities"][0]
                     for i in range(len(TEXTS))]
    else:
        path = export_tflite(model, preprocessor, tmp_path / "model.tflite")
        interpreter = InterpreterWithCustomOps(
            model_path=str(path), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
        runner = interpreter.get_signature_runner("serving_default")
        on_device = [runner(text=np.array([text.encode()], dtype=object))["probabilities"][0]
                     for text in TEXTS]
    assert pathlib.Path(path).stat().st_size > 0
    np.testing.assert_allclose(np.stack(on_device), served["probabilities"], atol=1e-4)
