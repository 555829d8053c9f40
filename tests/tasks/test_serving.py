"""The serving task follows the model's class; its arguments are checked."""

import pytest
import tensorflow as tf

import keras_bert_core as kbc
from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier
from keras_bert_core.tasks import (
    classification,
    embedding,
    question_answering,
    serving,
    serving_dispatch,
    token_classification,
)
from keras_bert_core.text.preprocessor import BertPreprocessor
from tests.export.helpers import bag_of_words_model


def test_the_task_follows_the_model_class(char_vocab_file):
    preprocessor = BertPreprocessor(str(char_vocab_file), seq_length=16)
    encoder = kbc.BertEncoder(kbc.BertConfig.preset(
        "tiny", vocab_size=len(preprocessor.vocabulary), max_position_embeddings=16))
    cases = [
        (BertClassifier(encoder, num_classes=2), {}, classification.Classification, ("text",)),
        (BertClassifier(encoder, num_classes=2), {"pairs": True}, classification.Classification,
         ("text_a", "text_b")),
        (BertClassifier(encoder, num_classes=1), {}, classification.Regression, ("text",)),
        (BertSpanLabeler(encoder), {"pairs": True}, question_answering.SpanQuestionAnswering,
         ("question", "context")),
        (BertTokenClassifier(encoder, num_classes=3), {}, token_classification.TokenTagging,
         ("text",)),
        (encoder, {}, embedding.SentenceEmbedding, ("text",)),
        (bag_of_words_model(len(preprocessor.vocabulary)), {}, serving.RawOutputs, ("text",)),
    ]
    for model, options, kind, inputs in cases:
        task = serving_dispatch.serving_task(model, preprocessor, **options)
        assert type(task) is kind and task.text_inputs == inputs, model.name
    regression = serving_dispatch.serving_task(cases[2][0], preprocessor)
    assert regression.outputs(tf.constant([[0.5], [2.0]]), None)["score"].numpy().tolist() == [
        0.5, 2.0]
    small = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100,
                                                  max_position_embeddings=16))
    with pytest.raises(ValueError, match=f"vocabulary has {len(preprocessor.vocabulary)} "
                                         "tokens but the model's word embeddings have only "
                                         "100 rows"):
        serving_dispatch.serving_task(BertClassifier(small, num_classes=2), preprocessor)
    with pytest.raises(ValueError, match="max_answer_length must be a positive integer"):
        serving_dispatch.serving_task(cases[3][0], preprocessor, max_answer_length=0)
