"""Embedding models served: `TextEmbedding` (a `BertEmbedder`'s vectors) and
`SentenceEmbedding` (a bare encoder's pooled and mean vectors)."""

import tensorflow as tf

from keras_bert_core.tasks.serving import ServingTask

# The writers' own signatures, which a prompt's signature must not replace.
_RESERVED = ("serving_default", "predict_ids", "tokenize")


class TextEmbedding(ServingTask):
    """A `BertEmbedder` served: its vectors (normalized where it normalizes) as
    `embedding`, float32 `[batch, dim]`.

    `serving_default` embeds texts with the model's default prompt before them (as its
    `predict` does); with prompts, each prompt name is a signature of its own (`query`,
    `document`...) that puts that prompt before the texts.

    Args:
        default_prompt: the prompt of `serving_default` (`""`: none).
        prompts: prompt name -> prompt, one signature each.

    Example:
    >>> task = TextEmbedding(prompts={"query": "query: ", "document": "passage: "})
    >>> sorted(task.prompt_signatures), task.default_prompt
    (['document', 'query'], '')
    >>> task.outputs(tf.constant([[0.6, 0.8]]), None)["embedding"].numpy().tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """

    pooled = True

    def __init__(self, default_prompt="", prompts=None):
        super().__init__()
        prompts = dict(prompts or {})
        clashes = sorted(set(prompts) & set(_RESERVED))
        if clashes:
            raise ValueError(f"prompt names {clashes} would replace the export's own "
                             f"signatures {list(_RESERVED)}: rename the prompts")
        self.default_prompt = default_prompt
        self.prompt_signatures = prompts

    def outputs(self, model_outputs, features):
        return {"embedding": tf.cast(model_outputs, tf.float32)}


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

    pooled = True

    def outputs(self, model_outputs, features):
        sequence = tf.cast(model_outputs["sequence_output"], tf.float32)
        real = tf.expand_dims(tf.cast(features["padding_mask"] > 0, tf.float32), 2)
        # Every row holds [CLS] and [SEP], so the count is never 0.
        mean = tf.reduce_sum(sequence * real, axis=1) / tf.reduce_sum(real, axis=1)
        outputs = {"mean_embedding": mean}
        if "pooled_output" in model_outputs:  # DistilBERT has no pooler
            outputs["pooled_output"] = tf.cast(model_outputs["pooled_output"], tf.float32)
        return outputs
