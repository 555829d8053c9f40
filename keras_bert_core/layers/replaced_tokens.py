"""ELECTRA's corruption step: the generator's samples replace the masked tokens."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_core")
class ReplacedTokenSampler(keras.layers.Layer):
    """Samples a token at every masked position from the generator's logits and writes the
    samples into the sequence, as ELECTRA's replaced-token detection trains on.

    Sampling is Gumbel-max (the argmax of the logits plus Gumbel noise: a draw from their
    softmax) and passes no gradient: the generator learns from its masked-LM loss alone. A
    sample equal to the original token counts as not replaced (Clark et al., 2020).

    Args:
        temperature: the logits are divided by it before sampling (1.0: ELECTRA's).
        seed: the seed of the sampling noise.

    Call arguments:
        mlm_logits: float `[batch, predictions, vocab]`, the generator's.
        token_ids: int32 `[batch, seq]`, the masked sequence the generator read.
        masked_positions: int32 `[batch, predictions]`.
        masked_ids: int32 `[batch, predictions]`, the original tokens there.
        masked_weights: `[batch, predictions]`, 0 at unused prediction slots.

    Returns `(corrupted_ids, replaced)`: int32 `[batch, seq]` each, the sequence with the
    samples written in (the original tokens elsewhere) and 1 where it differs from the
    original.

    Example:
    >>> import numpy as np
    >>> sampler = ReplacedTokenSampler(seed=0)
    >>> logits = np.full((1, 2, 10), -1e4, "float32")
    >>> logits[0, 0, 7] = logits[0, 1, 5] = 0.0  # certain samples: 7 and 5
    >>> ids, replaced = sampler(logits, np.array([[2, 4, 6, 4, 3]], "int32"),
    ...                        np.array([[1, 3]], "int32"), np.array([[8, 5]], "int32"),
    ...                        np.array([[1.0, 1.0]], "float32"))
    >>> np.asarray(ids).tolist(), np.asarray(replaced).tolist()
    ([[2, 7, 6, 5, 3]], [[0, 1, 0, 0, 0]])
    """

    def __init__(self, temperature=1.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.temperature = temperature
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, mlm_logits, token_ids, masked_positions, masked_ids, masked_weights):
        logits = ops.stop_gradient(ops.cast(mlm_logits, "float32")) / self.temperature
        uniform = keras.random.uniform(ops.shape(logits), minval=1e-9, maxval=1.0,
                                       seed=self.seed_generator)
        sampled = ops.cast(ops.argmax(logits - ops.log(-ops.log(uniform)), axis=-1), "int32")
        # [batch, predictions, seq]: which position each real prediction slot writes.
        slots = ops.one_hot(masked_positions, ops.shape(token_ids)[1], dtype="int32")
        slots = slots * ops.cast(ops.expand_dims(masked_weights > 0, -1), "int32")
        written = ops.minimum(ops.sum(slots, axis=1), 1)
        kept = token_ids * (1 - written)
        corrupted = kept + ops.sum(slots * ops.expand_dims(sampled, -1), axis=1)
        original = kept + ops.sum(slots * ops.expand_dims(masked_ids, -1), axis=1)
        return corrupted, ops.cast(ops.not_equal(corrupted, original), "int32")

    def compute_output_shape(self, mlm_logits_shape, token_ids_shape, *args):
        return tuple(token_ids_shape), tuple(token_ids_shape)

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature, "seed": self.seed}
