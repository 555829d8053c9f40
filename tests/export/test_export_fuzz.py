"""Fuzz inputs through both exports of the tiny classifier: the SavedModel (TF Serving, the
reference tokenizer) and the `.tflite` file (LiteRT, the TFLite-compatible tokenizer) read
them into the same ids and agree on the labels."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import SEQ_LENGTH
from tests.text.fuzz_texts import fuzz_texts

FUZZ_COUNT = 300
REQUEST_ROWS = 100  # under the SavedModel's max_batch_size


@pytest.fixture(scope="module")
def litert():
    return pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not "
                               "installed (pip install ai-edge-litert): no LiteRT interpreter")


def signature_runner(litert, model_content):
    interpreter = litert.InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_content=model_content)
    return interpreter.get_signature_runner()


def served(signature, texts):
    """A SavedModel signature's outputs for `texts`, in requests of REQUEST_ROWS."""
    parts = [signature(text=tf.constant(texts[i : i + REQUEST_ROWS]))
             for i in range(0, len(texts), REQUEST_ROWS)]
    return {name: [row for part in parts for row in part[name].numpy()] for name in parts[0]}


def tflite_token_ids(litert, preprocessor, texts):
    """Token ids of the TFLite-compatible copy of `preprocessor` (what `export_tflite` puts in
    the file), converted and run in LiteRT one text per call."""
    on_device = BertPreprocessor(preprocessor.vocabulary, seq_length=SEQ_LENGTH,
                                 lower_case=preprocessor.lower_case, tflite_compatible=True)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(text):
        features = on_device(text)
        return {"token_ids": features["token_ids"], "padding_mask": features["padding_mask"]}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [tokenize.get_concrete_function()], on_device)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    run = signature_runner(litert, converter.convert())
    rows = []
    for text in texts:
        out = run(text=np.array([text], dtype=object))
        rows.append(out["token_ids"][0][out["padding_mask"][0] == 1].tolist())
    return rows


def test_fuzz_inputs_get_the_same_ids_and_labels_from_both_exports(
        litert, preprocessor, classifier_signatures, classifier_tflite):
    texts = fuzz_texts(FUZZ_COUNT, seed=7)
    features = served(classifier_signatures["tokenize"], texts)
    served_ids = [ids[mask == 1].tolist() for ids, mask in zip(
        features["token_ids"], features["padding_mask"], strict=True)]
    on_device_ids = tflite_token_ids(litert, preprocessor, texts)
    same_ids = np.mean([a == b for a, b in zip(served_ids, on_device_ids, strict=True)])
    assert same_ids == 1.0, f"{same_ids:.2%} of {len(texts)} fuzz inputs with the same ids"

    run = signature_runner(litert, classifier_tflite.read_bytes())
    on_device = np.concatenate([run(text=np.array([text], dtype=object))["probabilities"]
                                for text in texts])
    answers = served(classifier_signatures["serving_default"], texts)
    labels = np.array(answers["label"])
    assert len(set(labels.tolist())) > 1
    agreement = np.mean(on_device.argmax(-1) == labels)
    assert agreement == 1.0, f"labels agree on {agreement:.2%} of {len(texts)} fuzz inputs"
    np.testing.assert_allclose(on_device, np.array(answers["probabilities"]), atol=1e-4)
