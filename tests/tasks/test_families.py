"""Span QA and token tagging with RoBERTa's, XLM-RoBERTa's, ALBERT's and DeBERTa's tokenizers: the
rows are packed as each family packs pairs, and answers and words come back from the text in
any layout."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_core.tasks.question_answering import (
    SpanQuestionAnswering,
    SquadExample,
    squad_features,
)
from keras_bert_core.tasks.token_classification import TaggingData, TokenTagging, tagging_features
from keras_bert_core.text.preprocessor import BertPreprocessor

FAMILIES = os.path.join(os.path.dirname(__file__), os.pardir, "checkpoints", "data",
                        "families")
CONTEXT = "The tower was finished in 1889 by Gustave Eiffel for the world fair."
QUESTION = "Who finished the tower?"


def _preprocessor(family):
    folder = (os.path.join(FAMILIES, os.pardir, family, "mlm")
              if family in ("xlm_roberta", "deberta") else os.path.join(FAMILIES, family))
    return BertPreprocessor(folder, seq_length=64)


@pytest.mark.parametrize("family", ["roberta", "albert", "distilbert", "xlm_roberta",
                                    "deberta"])
def test_squad_rows_are_packed_as_the_family_packs_pairs(family):
    preprocessor = _preprocessor(family)
    answer_start = CONTEXT.index("Gustave Eiffel")
    example = SquadExample("q", QUESTION, CONTEXT, ["Gustave Eiffel"], [answer_start])
    features = squad_features([example], preprocessor.tokenizer, max_seq_length=64,
                              doc_stride=16, max_query_length=16)
    # The same rows the preprocessor packs from the two texts.
    packed = preprocessor((tf.constant([QUESTION]), tf.constant([CONTEXT])))
    length = int(packed["padding_mask"].numpy().sum())
    for name in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(features.inputs[name][0, :length],
                                      packed[name].numpy()[0, :length])
    # The answer's pieces cover "Gustave Eiffel" in the context.
    start, end = int(features.start_positions[0]), int(features.end_positions[0])
    begin, finish = features.char_starts[0, start], features.char_ends[0, end]
    assert CONTEXT[begin:finish].strip() == "Gustave Eiffel"

    # Serving: logits peaked at the answer give back its text from the raw context.
    task = SpanQuestionAnswering(preprocessor.packer, max_answer_length=30)
    texts = {"question": tf.constant([QUESTION]), "context": tf.constant([CONTEXT])}
    features_in_graph, offsets = task.encode(preprocessor, texts, static_shape=False)
    width = tf.shape(features_in_graph["token_ids"])[1]
    logits = {"start_logits": tf.one_hot([start], width) * 10.0,
              "end_logits": tf.one_hot([end], width) * 10.0}
    outputs = task.outputs(logits, features_in_graph)
    outputs.update(task.offset_outputs(outputs, features_in_graph, offsets))
    answer = task.text_outputs(outputs, features_in_graph, texts, offsets)["answer"]
    assert answer.numpy()[0].decode().strip() == "Gustave Eiffel"


@pytest.mark.parametrize("family", ["roberta", "albert", "distilbert", "xlm_roberta",
                                    "deberta"])
def test_tagging_labels_and_serves_each_word_at_its_first_piece(family):
    preprocessor = _preprocessor(family)
    words = ["Gustave", "Eiffel", "finished", "the", "tower"]
    data = TaggingData([words], [[1, 2, 0, 0, 0]], ["O", "B-PER", "I-PER"])
    features = tagging_features(data, preprocessor.tokenizer, seq_length=64)
    text = tf.constant([" ".join(words)])
    packed = preprocessor(text, static_shape=False)
    length = int(packed["padding_mask"].numpy().sum())
    # Word by word, the pieces are those of the sentence.
    np.testing.assert_array_equal(features.inputs["token_ids"][0, :length],
                                  packed["token_ids"].numpy()[0, :length])
    task = TokenTagging(preprocessor.vocabulary, (preprocessor.cls_id, preprocessor.sep_id,
                                                  preprocessor.pad_id), data.tag_names,
                        continues_word=preprocessor.tokenizer.continues_word)
    features_in_graph, offsets = task.encode(preprocessor, {"text": text}, static_shape=False)
    labels = features.labels[0, :length]
    width = int(tf.shape(features_in_graph["token_ids"])[1])
    logits = tf.one_hot([np.pad(np.where(labels >= 0, labels, 0), (0, width - length))], 3)
    outputs = task.outputs(logits, features_in_graph)
    # Words start where the training data put their labels.
    np.testing.assert_array_equal(outputs["word_start"].numpy()[0, :length], labels >= 0)
    outputs.update(task.offset_outputs(outputs, features_in_graph, offsets))
    served = task.text_outputs(outputs, features_in_graph, {"text": text}, offsets)
    assert [w.decode() for w in served["words"].numpy()[0][:len(words)]] == words
    assert outputs["word_tags"].numpy()[0][:len(words)].tolist() == [1, 2, 0, 0, 0]
