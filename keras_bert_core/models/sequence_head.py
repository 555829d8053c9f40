"""The family's head on a whole sequence (classifier, multiple choice): what it reads and
how it is built, one place for the task models and the distiller that replays them."""

from keras import ops

from keras_bert_core.layers.heads import ClassificationHead


def sequence_head(config, num_classes, dropout, use_pooler, dtype, name):
    """A `ClassificationHead` as the family has it: on BERT's pooled output a dense layer
    alone; else a hidden dense layer with `config.classifier_activation` first, followed by
    a bias-free LayerNorm for ModernBERT (its `ModernBertPredictionHead`)."""
    modernbert = config.family == "modernbert"
    return ClassificationHead(
        num_classes, dropout=dropout, initializer_range=config.initializer_range,
        hidden_activation=None if use_pooler else config.classifier_activation,
        hidden_norm_epsilon=config.layer_norm_eps if modernbert else None,
        use_bias=config.use_bias, dtype=dtype, name=name)


def read_positions(config):
    """The positions the encoder's last block must compute for the head: `"cls"`, or
    `None` (all) where the family pools the mean (`config.classifier_pooling`)."""
    return None if config.classifier_pooling == "mean" else "cls"


def head_features(config, encoded, padding_mask, use_pooler):
    """The vector a sequence head reads: the pooled output, the first token's, or the mean
    over the real tokens."""
    if use_pooler:
        return encoded["pooled_output"]
    sequence = encoded["sequence_output"]
    if config.classifier_pooling != "mean":
        return sequence[:, 0, :]
    real = ops.cast(ops.expand_dims(ops.greater(padding_mask, 0), -1), sequence.dtype)
    return ops.sum(sequence * real, axis=1) / ops.maximum(ops.sum(real, axis=1), 1.0)
