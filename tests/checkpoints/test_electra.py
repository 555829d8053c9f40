"""ELECTRA checkpoints: Hugging Face discriminator, generator and classifier folders, and
google-research TF1 checkpoints, against transformers' PyTorch outputs.

The fixtures are small random models saved by `transformers`, written by
make_electra_fixtures.py (beside this file).
"""

import json
import os
import re

import keras
import numpy as np
import tensorflow as tf
from safetensors.numpy import load_file

import keras_bert_core as kbc
from keras_bert_core.checkpoints import load_checkpoint, load_pretrainer
from keras_bert_core.checkpoints.loader import read_pretraining_head_weights
from keras_bert_core.export import export_saved_model, export_tflite
from keras_bert_core.layers import ClassificationHead
from tests.checkpoints.parity import max_diff, read_reference, reference_inputs
from tests.models.test_families import PUBLISHED_PARAMETERS

ELECTRA = os.path.join(os.path.dirname(__file__), "data", "electra")
TOLERANCE = 1e-4


def _detector(config, heads):
    """The discriminator's replaced-token head with the checkpoint's weights."""
    head = ClassificationHead(1, dropout=0.0, hidden_activation=config.hidden_act)
    head.build((None, None, config.hidden_size))
    for layer, name in ((head.hidden, "rtd/dense"), (head.dense, "rtd/output")):
        layer.kernel.assign(heads[f"{name}/kernel"])
        layer.bias.assign(heads[f"{name}/bias"])
    return head


def _check_discriminator(encoder, config, heads, reference):
    outputs = encoder(reference_inputs(reference))
    real = reference["attention_mask"].astype(bool)
    sequence = np.asarray(outputs["sequence_output"])
    assert max_diff(sequence[real], reference["sequence_output"]) <= TOLERANCE
    logits = np.asarray(_detector(config, heads)(sequence))[..., 0]
    assert max_diff(logits[real], reference["logits"][real]) <= TOLERANCE


def test_discriminator_and_its_replaced_token_head_match_pytorch():
    folder = os.path.join(ELECTRA, "discriminator")
    encoder, config = load_checkpoint(folder)
    assert (config.family, config.embedding_size, config.pooler) == ("electra", 16, False)
    assert "pooled_output" not in encoder.output
    _check_discriminator(encoder, config, read_pretraining_head_weights(folder),
                         read_reference(ELECTRA, "discriminator"))


def test_generator_and_its_masked_lm_head_match_pytorch():
    reference = read_reference(ELECTRA, "generator")
    pretrainer, config = load_pretrainer(os.path.join(ELECTRA, "generator"))
    assert (config.hidden_size, config.embedding_size) == (24, 16)
    encoded = np.asarray(pretrainer.encoder(reference_inputs(reference))["sequence_output"])
    real = reference["attention_mask"].astype(bool)
    assert max_diff(encoded[real], reference["sequence_output"]) <= TOLERANCE
    rows, columns = reference["mlm_positions"].T
    logits = pretrainer.masked_lm(encoded[rows, columns][None])[0]
    assert max_diff(logits, reference["mlm_logits"]) <= TOLERANCE


def _classifier():
    """The classifier folder's model, its head's weights from the checkpoint."""
    folder = os.path.join(ELECTRA, "classifier")
    encoder, _ = load_checkpoint(folder)
    model = kbc.BertClassifier(encoder, num_classes=3, dropout=0.0)
    state = load_file(os.path.join(folder, "model.safetensors"))
    # dense + GELU on the first token, then out_proj.
    for layer, key in ((model.head.hidden, "classifier.dense"),
                       (model.head.dense, "classifier.out_proj")):
        layer.kernel.assign(state[f"{key}.weight"].T)
        layer.bias.assign(state[f"{key}.bias"])
    return model, folder


def test_the_classifier_head_is_electras_and_matches_pytorch():
    model, _ = _classifier()
    logits = model.predict(reference_inputs(read_reference(ELECTRA, "classifier")), verbose=0)
    assert max_diff(logits, read_reference(ELECTRA, "classifier")["logits"]) <= TOLERANCE


def test_the_classifiers_saved_model_and_tflite_take_raw_text_and_answer_as_keras(tmp_path):
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text import tflite_registrar

    model, folder = _classifier()
    preprocessor = kbc.BertPreprocessor(folder, seq_length=32)
    texts = ["the value of the list", "Return a new list, sorted.", "x"]
    expected = np.asarray(keras.ops.softmax(
        model(preprocessor(texts, static_shape=False), training=False)))
    served = tf.saved_model.load(str(export_saved_model(
        model, preprocessor, tmp_path / "saved", warmup=False)))
    probabilities = served.signatures["serving_default"](text=tf.constant(texts))
    assert max_diff(probabilities["probabilities"], expected) <= 1e-5
    interpreter = InterpreterWithCustomOps(
        model_path=str(export_tflite(model, preprocessor, tmp_path / "model.tflite")),
        custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
    runner = interpreter.get_signature_runner("serving_default")
    on_device = [runner(text=np.array([text.encode()], dtype=object))["probabilities"][0]
                 for text in texts]
    assert max_diff(np.stack(on_device), expected) <= 1e-4


# Hugging Face's rules (load_tf_weights_in_electra) that turn google-research/electra
# variable names into its own: an independent account of the TF1 names.
def _hf_name(tf1_name, part):
    name = tf1_name
    if part == "generator":
        name = name.replace("electra/embeddings/", "generator/embeddings/")
        name = name.replace("electra/", "discriminator/").replace("generator/", "electra/")
    name = name.replace("dense_1", "dense_prediction")
    name = name.replace("generator_predictions/output_bias", "generator_lm_head/bias")
    name = name.replace("/gamma", "/weight").replace("/beta", "/bias")
    name = re.sub(r"layer_(\d+)", r"layer/\1", name.replace("/kernel", "/weight"))
    if name.endswith("_embeddings"):
        name += "/weight"
    return name.replace("/", ".")


def test_google_research_tf1_checkpoint_matches_pytorch(tmp_path):
    import tensorflow as tf

    from keras_bert_core.checkpoints import encoder_variables, google_research_electra

    tensors = {}
    for part, scope in google_research_electra.SCOPES.items():
        state = load_file(os.path.join(ELECTRA, part, "model.safetensors"))
        encoder, _ = load_checkpoint(os.path.join(ELECTRA, part))
        # (A reader with no keys: the generator reads the shared tables.)
        source = google_research_electra._source_of(type("Reader", (), {"shapes": {}}), scope)
        names = [source(name).key for name in encoder_variables(encoder)]
        names += [s.key for s in google_research_electra._HEADS[part].values()]
        for name in names:
            value = state[_hf_name(name, part)]
            tensors[name] = value.T if name.endswith("/kernel") else value
    # The generator's tables are the discriminator's (the fixtures' differ: keep the latter).
    discriminator = load_file(os.path.join(ELECTRA, "discriminator", "model.safetensors"))
    for key in [k for k in tensors if k.startswith("electra/embeddings/")]:
        tensors[key] = discriminator[_hf_name(key, "discriminator")]
    prefix = str(tmp_path / "electra_small")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors),
                      shape_and_slices=[""] * len(tensors),
                      tensors=[tf.constant(v) for v in tensors.values()])
    # No configuration beside it (as ELECTRA's releases): the sizes come from the shapes,
    # with 64-wide heads; the fixture's 8-wide heads are given with config=.
    inferred = google_research_electra.inferred_config(
        google_research_electra.open_tf_checkpoint(prefix))
    _, config = load_checkpoint(os.path.join(ELECTRA, "discriminator"))
    assert inferred == kbc.BertConfig.from_dict({**config.to_dict(), "num_heads": 1,
                                                 "initializer_range": 0.02})
    encoder, loaded_config = load_checkpoint(prefix, config=config)
    _check_discriminator(encoder, config, read_pretraining_head_weights(prefix),
                         read_reference(ELECTRA, "discriminator"))
    # The generator reads the shared tables under electra/embeddings/.
    _, generator_config = load_checkpoint(os.path.join(ELECTRA, "generator"))
    generator, _ = google_research_electra.load(prefix, generator_config, part="generator")
    heads = google_research_electra.read_heads(prefix, part="generator")
    assert sorted(heads) == sorted(google_research_electra._HEADS["generator"])
    np.testing.assert_array_equal(generator.embeddings.word_embeddings.numpy(),
                                  encoder.embeddings.word_embeddings.numpy())


def test_presets_have_transformers_parameter_counts():
    with open(os.path.join(ELECTRA, "param_counts.json"), encoding="utf-8") as f:
        published = json.load(f)
    for name, entry in published.items():
        ours, theirs = kbc.BertConfig.preset(name), kbc.BertConfig.from_dict(entry["config"])
        for field in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                      "intermediate_size", "embedding_size", "pooler", "family", "hidden_act"):
            assert getattr(theirs, field) == getattr(ours, field), (name, field)
        # tests/models/test_families.py builds each preset and counts its parameters.
        assert entry["num_parameters"] == PUBLISHED_PARAMETERS[name]


def test_every_task_head_runs_on_the_discriminator_and_from_preset_reads_its_folder(tmp_path):
    folder = os.path.join(ELECTRA, "discriminator")
    model, preprocessor = kbc.from_preset(folder, seq_length=16)
    encoder = kbc.checkpoints.keras_file.find_model(model, kbc.BertEncoder)
    assert encoder.config.family == "electra"
    inputs = preprocessor(["the value of the list", "return the list"])
    choices = {name: np.stack([value, value], axis=1) for name, value in inputs.items()}
    outputs = {
        "classifier": (kbc.BertClassifier(encoder, num_classes=3), inputs, (2, 3)),
        "tagger": (kbc.BertTokenClassifier(encoder, num_classes=5), inputs, (2, 16, 5)),
        "choice": (kbc.BertMultipleChoice(encoder, num_choices=2), choices, (2, 2)),
        "embedder": (kbc.BertEmbedder(encoder), inputs, (2, 32)),
    }
    for name, (task_model, x, shape) in outputs.items():
        assert tuple(np.shape(task_model(x))) == shape, name
    span = kbc.BertSpanLabeler(encoder)(inputs)
    assert {tuple(np.shape(value)) for value in span.values()} == {(2, 16)}
