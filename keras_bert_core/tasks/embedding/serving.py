"""`SentenceEmbedding`: a bare encoder served as a text embedding model."""

import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask


class SentenceEmbedding(ServingTask):
    """A bare `BertEncoder` served as a text embedding model: the pooled `[CLS]` vector and
    the mean of the token vectors.

    Example:
    >>> encoded = {"sequence_output": tf.constant([[[1.0], [3.0], [9.0]]]),
    ...            "pooled_output": tf.constant([[0.5]])}
    >>> features = {"padding_mask": tf.constant([[1, 1, 0]])}
    >>> SentenceEmbedding().outputs(encoded, features)["mean_embedding"].numpy().tolist()
    [[2.0]]
    """

    def outputs(self, model_outputs, features):
        sequence = tf.cast(model_outputs["sequence_output"], tf.float32)
        real = tf.expand_dims(tf.cast(features["padding_mask"] > 0, tf.float32), 2)
        # Every row holds [CLS] and [SEP], so the count is never 0.
        mean = tf.reduce_sum(sequence * real, axis=1) / tf.reduce_sum(real, axis=1)
        outputs = {"mean_embedding": mean}
        if "pooled_output" in model_outputs:  # DistilBERT has no pooler
            outputs["pooled_output"] = tf.cast(model_outputs["pooled_output"], tf.float32)
        return outputs
