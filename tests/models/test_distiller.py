"""`Distiller`: the soft-target term against its closed form, a student that learns what a
trained teacher knows, DistilBERT-style initialization, every task kind, stored teacher
outputs, mixed precision, 2 replicas against one device, and the student's `.keras` file.

Tiny encoders take int32 ids straight (no tokenizer)."""

import os

import keras
import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints.keras_file import load_model
from keras_bert_core.models.distillation import (
    TEACHER_OUTPUTS,
    check_vocabularies,
    distillation_kl,
)
from tests.models import distiller_mirrored

VOCAB, SEQ = 40, 12


def config(hidden_size=32, num_layers=1, num_heads=2, **overrides):
    return kbc.BertConfig(**{
        "vocab_size": VOCAB, "hidden_size": hidden_size, "num_layers": num_layers,
        "num_heads": num_heads, "intermediate_size": 2 * hidden_size,
        "max_position_embeddings": SEQ, "dropout": 0.0, "attention_dropout": 0.0,
        **overrides})


def keyword_task(rng, count):
    """Is word 5 in the row? Rows `[CLS] w ... w [SEP]` of random words 6.. otherwise."""
    ids = rng.integers(6, VOCAB, size=(count, SEQ)).astype("int32")
    ids[:, 0], ids[:, -1] = 2, 3
    labels = rng.integers(0, 2, size=count)
    positions = rng.integers(1, SEQ - 1, size=count)
    ids[labels == 1, positions[labels == 1]] = 5
    return inputs(ids), labels.astype("int32")


def inputs(ids):
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids),
            "padding_mask": (ids > 0).astype("int32")}


def padded_rows(rng, count, seq=SEQ):
    ids = rng.integers(6, VOCAB, size=(count, seq)).astype("int32")
    lengths = rng.integers(3, seq + 1, size=count)
    ids[np.arange(seq)[None, :] >= lengths[:, None]] = 0
    ids[:, 0] = 2
    return ids


def numpy_kl(teacher, student, temperature):
    def softmax(z):
        z = np.asarray(z, np.float64) / temperature
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    p, q = softmax(teacher), softmax(student)
    return np.sum(p * (np.log(p) - np.log(q)), axis=-1) * temperature**2


@pytest.mark.parametrize("temperature", [1.0, 2.0, 5.0])
def test_kl_term_with_temperature_equals_its_closed_form(temperature):
    teacher = np.array([[3.0, 1.0, -2.0], [0.5, 0.5, 4.0], [0.0, 0.0, 0.0]], "float32")
    student = np.array([[1.0, 2.0, 0.0], [-1.0, 3.0, 1.0], [2.0, -2.0, 0.0]], "float32")
    np.testing.assert_allclose(distillation_kl(teacher, student, temperature),
                               numpy_kl(teacher, student, temperature), rtol=1e-5)
    np.testing.assert_allclose(distillation_kl(teacher, teacher, temperature), 0, atol=1e-6)


def test_distillers_soft_loss_is_the_closed_form_on_given_teacher_logits():
    rng = np.random.default_rng(0)
    student = kbc.BertClassifier(kbc.BertEncoder(config()), num_classes=3, dropout=0.0)
    x = inputs(padded_rows(rng, 4))
    teacher_logits = rng.normal(size=(4, 3)).astype("float32") * 3
    distiller = kbc.Distiller(None, student, temperature=3.0, alpha=0.25)
    logs = distiller.evaluate({**x, TEACHER_OUTPUTS: teacher_logits}, np.array([0, 1, 2, 0]),
                              batch_size=4, verbose=0, return_dict=True)
    student_logits = student.predict(x, verbose=0)
    expected_soft = numpy_kl(teacher_logits, student_logits, 3.0).mean()
    expected_hard = np.mean(-np.log(np.exp(student_logits[np.arange(4), [0, 1, 2, 0]])
                                    / np.exp(student_logits).sum(-1)))
    assert logs["soft_loss"] == pytest.approx(expected_soft, rel=1e-4)
    assert logs["hard_loss"] == pytest.approx(expected_hard, rel=1e-4)
    assert logs["loss"] == pytest.approx(0.25 * expected_hard + 0.75 * expected_soft, rel=1e-4)


def test_student_distilled_from_a_trained_teacher_reaches_its_accuracy():
    rng = np.random.default_rng(0)
    (x, y), (x_test, y_test) = keyword_task(rng, 512), keyword_task(rng, 256)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config(64)), num_classes=2, dropout=0.0)
    teacher.compile(optimizer=kbc.BertAdamW(3e-3))
    teacher.fit(x, y, batch_size=32, epochs=8, verbose=0)
    teacher_accuracy = np.mean(teacher.predict(x_test, verbose=0).argmax(-1) == y_test)
    assert teacher_accuracy >= 0.9
    # Half the width; soft targets only, from the teacher: no label reaches the student.
    student = kbc.BertClassifier(kbc.BertEncoder(config(32)), num_classes=2, dropout=0.0)
    chance = np.mean(student.predict(x_test, verbose=0).argmax(-1) == y_test)
    distiller = kbc.Distiller(teacher, student, temperature=2.0, alpha=0.0)
    distiller.compile(optimizer=kbc.BertAdamW(3e-3))
    teacher_before = [w.copy() for w in teacher.get_weights()]
    distiller.fit(x, batch_size=32, epochs=8, verbose=0)
    student_accuracy = np.mean(student.predict(x_test, verbose=0).argmax(-1) == y_test)
    assert chance < 0.75
    assert student_accuracy >= teacher_accuracy - 0.03
    for before, after in zip(teacher_before, teacher.get_weights(), strict=True):
        np.testing.assert_array_equal(before, after)  # the teacher is frozen


def layer_outputs(encoder, x):
    """Every block's output of `encoder` (a copy that returns them), and its embeddings."""
    probe = kbc.BertEncoder.from_config({**encoder.get_config(), "output_encoder_outputs": True})
    probe.set_weights(encoder.get_weights())
    embedded = probe.embeddings(x["token_ids"], x["segment_ids"])
    return [np.asarray(embedded)] + [np.asarray(o) for o in probe(x)["encoder_outputs"]]


@pytest.mark.parametrize("teacher_layers, expected", [(None, [0, 2, 4]), ((1, 4), [1, 4])])
def test_distilbert_initialization_copies_the_teachers_layers(teacher_layers, expected):
    rng = np.random.default_rng(0)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config(num_layers=5)), num_classes=3)
    for weight in teacher.weights:  # not the initial values, which repeat (zeros, ones)
        weight.assign(rng.normal(scale=0.1, size=weight.shape).astype(weight.dtype))
    student = kbc.make_distilbert_student(teacher, teacher_layers)
    assert isinstance(student, kbc.BertClassifier) and student.num_classes == 3
    assert student.encoder.config.num_layers == len(expected)
    x = inputs(padded_rows(rng, 3))
    teacher_states = layer_outputs(teacher.encoder, x)
    student_states = layer_outputs(student.encoder, x)
    np.testing.assert_allclose(student_states[0], teacher_states[0], atol=1e-6)
    bias = kbc.layers.attention_bias(x["padding_mask"])
    for block, index in zip(student.encoder.blocks, expected, strict=True):
        # Fed the teacher's input to its layer `index`, the copy computes that layer's output.
        np.testing.assert_allclose(block(teacher_states[index], bias),
                                   teacher_states[index + 1], atol=1e-5)
    np.testing.assert_allclose(student.encoder.pooler.kernel, teacher.encoder.pooler.kernel)
    for mine, theirs in zip(student.head.get_weights(), teacher.head.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_distilbert_initialization_of_a_pretrainer_copies_its_heads():
    teacher = kbc.BertPretrainer(kbc.BertEncoder(config(num_layers=2)), next_sentence=True)
    student = kbc.make_distilbert_student(teacher)
    assert student.encoder.config.num_layers == 1 and student.next_sentence is not None
    for name, value in teacher.get_head_weights().items():
        np.testing.assert_array_equal(student.get_head_weights()[name], value, err_msg=name)
    with pytest.raises(ValueError, match="share weights"):
        kbc.make_distilbert_student(kbc.BertEncoder(config(num_layers=2, num_layer_groups=1)))


def kind_cases(rng):
    x = inputs(padded_rows(rng, 4))
    choices = {k: np.stack([v, v[::-1]], axis=1) for k, v in x.items()}
    tags = np.where(x["padding_mask"] > 0, x["token_ids"] % 3, -100)
    tags[:, 0] = -100
    return [
        ("regression", lambda e: kbc.BertClassifier(e, num_classes=1), x,
         rng.random(4).astype("float32")),
        ("span", kbc.BertSpanLabeler, x,
         {"start_positions": np.array([1, 1, 2, 0]), "end_positions": np.array([2, 1, 2, 0])}),
        ("tokens", lambda e: kbc.BertTokenClassifier(e, num_classes=3), x, tags),
        ("choice", lambda e: kbc.BertMultipleChoice(e, num_choices=2), choices,
         np.array([0, 1, 1, 0])),
    ]


@pytest.mark.parametrize("index", range(4), ids=["regression", "span", "tokens", "choice"])
def test_every_task_kind_distills_with_every_loss(index):
    rng = np.random.default_rng(index)
    _, make, x, y = kind_cases(rng)[index]
    # Wider teacher with more heads: a projection and head-averaged attention.
    teacher, student = make(kbc.BertEncoder(config(32, 1, 4))), make(kbc.BertEncoder(config(16)))
    distiller = kbc.Distiller(teacher, student, hidden_weight=1.0, hidden_loss="cosine",
                              attention_weight=1.0)
    assert distiller.hidden_projection is not None
    distiller.compile(optimizer=keras.optimizers.SGD(0.1))
    history = distiller.fit(x, y, batch_size=4, epochs=3, verbose=0).history
    for name in ("loss", "hard_loss", "soft_loss", "hidden_loss", "attention_loss"):
        assert np.all(np.isfinite(history[name])), name
    assert history["loss"][-1] < history["loss"][0]
    assert history["attention_loss"][0] > 0


def test_general_distillation_on_the_pretraining_dataset(tmp_path):
    corpus = tmp_path / "corpus.txt"
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    rng = np.random.default_rng(0)
    corpus.write_text("\n\n".join("\n".join(" ".join(rng.choice(words, 6)) for _ in range(3))
                                  for _ in range(20)) + "\n")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    dataset = kbc.pretraining_dataset(
        [str(corpus)], kbc.BertTokenizer(vocab), seq_length=SEQ, batch_size=4,
        max_predictions_per_seq=3, pair_task=None, seed=0).take(3)
    cfg = config(num_layers=2, vocab_size=len(vocab), pooler=False,
                 classifier_activation="relu")
    teacher = kbc.BertPretrainer(kbc.BertEncoder(cfg), next_sentence=False)
    distiller = kbc.Distiller.general(teacher, kbc.make_distilbert_student(teacher))
    history = distiller.fit(dataset, epochs=1, verbose=0).history
    assert sorted(history) == ["hard_loss", "hidden_loss", "loss", "mlm_accuracy", "soft_loss"]
    assert all(np.isfinite(values[0]) for values in history.values())
    # The copied layers start close to the teacher's last layer, not at chance.
    assert history["hidden_loss"][0] < 0.5


def test_stored_teacher_outputs_train_as_the_teacher_does(tmp_path):
    rng = np.random.default_rng(0)
    x, y = keyword_task(rng, 16)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config()), num_classes=2, dropout=0.0)
    student = kbc.BertClassifier(kbc.BertEncoder(config(16)), num_classes=2, dropout=0.0)
    initial = student.get_weights()
    import tensorflow as tf

    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(8, drop_remainder=True)
    assert kbc.cache_teacher_outputs(teacher, batches, str(tmp_path / "cache")) == 16
    histories = []
    for live in (True, False):
        student.set_weights(initial)
        distiller = kbc.Distiller(teacher if live else None, student)
        distiller.compile(optimizer=keras.optimizers.SGD(0.5))
        data = batches if live else kbc.load_teacher_outputs(str(tmp_path / "cache"), 8)
        histories.append(distiller.fit(data, epochs=2, verbose=0).history)
    for name in ("loss", "soft_loss", "hard_loss"):
        np.testing.assert_allclose(histories[1][name], histories[0][name], rtol=1e-5)
    with pytest.raises(ValueError, match="need the teacher itself"):
        kbc.Distiller(None, student, hidden_weight=1.0)


def test_mixed_precision_adds_loss_scaling_and_trains():
    keras.config.set_dtype_policy("mixed_float16")
    rng = np.random.default_rng(0)
    x, y = keyword_task(rng, 8)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config()), num_classes=2)
    student = kbc.BertClassifier(kbc.BertEncoder(config(16)), num_classes=2)
    distiller = kbc.Distiller(teacher, student, hidden_weight=1.0, attention_weight=1.0)
    assert isinstance(distiller.optimizer, keras.optimizers.LossScaleOptimizer)
    history = distiller.fit(x, y, batch_size=4, epochs=1, verbose=0).history
    assert all(np.isfinite(values[0]) for values in history.values())


def test_two_replicas_give_the_loss_curve_of_one_device(two_cpu_strategy):
    result = distiller_mirrored.results(two_cpu_strategy)
    assert result["replicas"] == 2
    single, mirrored = result["single"], result["mirrored"]
    # The replicas hold different numbers of real tokens; the token means count both.
    for name in ("loss", "hard_loss", "soft_loss", "hidden_loss", "attention_loss"):
        np.testing.assert_allclose(mirrored[name], single[name], rtol=1e-4, atol=1e-7,
                                   err_msg=name)
    assert single["loss"][-1] < 0.6 * single["loss"][0]  # it trained


def test_the_distilled_student_round_trips_through_a_keras_file(tmp_path):
    rng = np.random.default_rng(0)
    x, y = keyword_task(rng, 8)
    teacher = kbc.BertClassifier(kbc.BertEncoder(config()), num_classes=2)
    student = kbc.make_distilbert_student(kbc.BertClassifier(
        kbc.BertEncoder(config(num_layers=2)), num_classes=2))
    kbc.Distiller(teacher, student).fit(x, y, batch_size=4, verbose=0)
    path = os.path.join(tmp_path, "student.keras")
    student.save(path)
    loaded = load_model(path)
    assert type(loaded) is kbc.BertClassifier and loaded.encoder.config.num_layers == 1
    np.testing.assert_allclose(loaded.predict(x, verbose=0), student.predict(x, verbose=0),
                               atol=1e-6)


def test_attention_probabilities_are_opt_in():
    encoder = kbc.BertEncoder(config(num_heads=4))
    x = inputs(np.array([[2, 10, 11, 3, 0, 0]], "int32"))
    plain = encoder.encode(x)
    assert sorted(plain) == ["pooled_output", "sequence_output"]
    out = encoder.encode(x, return_attention=True)
    probs = np.asarray(out["attention_probs"])
    assert probs.shape == (1, 4, 6, 6)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(probs[..., 4:], 0.0)  # padding keys
    np.testing.assert_array_equal(out["sequence_output"], plain["sequence_output"])


def test_mismatched_models_are_refused_in_one_line():
    encoder = kbc.BertEncoder(config())
    classifier = kbc.BertClassifier(encoder, num_classes=2)
    with pytest.raises(TypeError, match="the teacher must be a keras_bert_core task model"):
        kbc.Distiller(encoder, classifier)
    with pytest.raises(TypeError, match="same kind of model"):
        kbc.Distiller(kbc.BertSpanLabeler(encoder), classifier)
    with pytest.raises(ValueError, match="differ in num_classes: 3 vs 2"):
        kbc.Distiller(kbc.BertClassifier(encoder, num_classes=3), classifier)
    other = kbc.BertClassifier(kbc.BertEncoder(config(vocab_size=50)), num_classes=2)
    with pytest.raises(ValueError, match="vocabularies differ: the teacher has vocab_size 50"):
        kbc.Distiller(other, classifier)
    with pytest.raises(ValueError, match="alpha must be in"):
        kbc.Distiller(classifier, classifier, alpha=2.0)
    with pytest.raises(ValueError, match="first difference at id 1: 'a' vs 'b'"):
        check_vocabularies(["[PAD]", "a"], ["[PAD]", "b"])


def test_metrics_count_only_examples_with_a_weight():
    # Unlabeled examples come with weight 0 and a stand-in label, which accuracy must skip.
    teacher = kbc.BertClassifier(kbc.BertEncoder(config()), num_classes=2)
    student = kbc.make_distilbert_student(teacher)
    x, _ = keyword_task(np.random.default_rng(3), 8)
    predicted = student.predict(x, verbose=0).argmax(-1)
    labels = np.where(np.arange(8) < 4, predicted, 1 - predicted).astype("int32")
    weights = (np.arange(8) < 4).astype("float32")
    distiller = kbc.Distiller(teacher, student)
    distiller.compile()
    scores = distiller.evaluate(x, labels, sample_weight=weights, verbose=0, return_dict=True)
    assert scores["accuracy"] == 1.0  # unweighted: 0.5
