"""A task model's outputs together with its last layer's states and attention, for the
hidden-state and attention losses."""

from keras import ops

from keras_bert_core.models.classifier import BertClassifier
from keras_bert_core.models.encoder import INPUT_NAMES
from keras_bert_core.models.multiple_choice import BertMultipleChoice
from keras_bert_core.models.sequence_head import head_features
from keras_bert_core.models.span_labeler import BertSpanLabeler
from keras_bert_core.models.token_classifier import BertTokenClassifier


def forward(model, x, training, internals):
    """`(outputs, internals)` of a task model: its outputs as `model(x)` gives them and, if
    `internals`, the last layer's `sequence_output` at every position, its
    `attention_probs` and the rows' `padding_mask` (multiple choice: one row per choice)."""
    if not internals:
        return model(x, training=training), None
    if isinstance(model, BertMultipleChoice):
        rows = {name: ops.concatenate(ops.unstack(x[name], axis=1), axis=0)
                for name in INPUT_NAMES}
    else:
        rows = {name: x[name] for name in INPUT_NAMES}
    encoded = model.encoder.encode(rows, training=training, return_attention=True)
    sequence = encoded["sequence_output"]
    config = model.encoder.config
    # The heads as each task model's graph applies them (its last block computes only the
    # positions it reads; here every position is computed, for the hidden-state losses).
    if isinstance(model, BertClassifier):
        features = head_features(config, encoded, rows["padding_mask"],
                                 config.classifier_activation is None)
        outputs = model.head(features, training=training)
    elif isinstance(model, BertMultipleChoice):
        features = head_features(config, encoded, rows["padding_mask"], config.pooler)
        scores = model.head(features, training=training)
        outputs = ops.transpose(ops.reshape(scores, (model.num_choices, -1)))
    elif isinstance(model, BertSpanLabeler):
        outputs = model.head(sequence, rows["padding_mask"])
    elif isinstance(model, BertTokenClassifier):
        outputs = model.head(sequence, training=training)
    else:
        outputs = {"mlm": model.masked_lm(sequence, x["masked_positions"], training=training)}
        if model.next_sentence is not None:
            outputs["nsp"] = model.next_sentence(encoded["pooled_output"], training=training)
    return outputs, {"sequence_output": sequence, "attention_probs": encoded["attention_probs"],
                     "padding_mask": rows["padding_mask"]}
