"""BERT's optimizers: AdamW and LAMB whose weight-decay exclusions survive saving.

`training.create_optimizer` adds BERT's warmup + linear decay schedule.
"""

import keras

# Matched (as regular expressions) against a variable's short name: Keras 3 names LayerNorm
# weights "gamma"/"beta" and biases "bias"; the TF1-style spellings cover converted models.
NO_WEIGHT_DECAY = ("bias", "gamma", "beta", "layer_norm", "LayerNorm")


class _BertOptimizerMixin:
    """BERT's defaults, and weight-decay exclusions that survive `get_config`: a plain Keras
    optimizer forgets `exclude_from_weight_decay` when saved, so a reloaded model would decay
    its LayerNorm weights and biases."""

    def __init__(self, learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0,
                 weight_decay_exclusions=NO_WEIGHT_DECAY, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, epsilon=epsilon,
                         global_clipnorm=global_clipnorm, **kwargs)
        self.weight_decay_exclusions = tuple(weight_decay_exclusions)
        if self.weight_decay_exclusions:
            self.exclude_from_weight_decay(var_names=list(self.weight_decay_exclusions))

    def get_config(self):
        return {**super().get_config(),
                "weight_decay_exclusions": list(self.weight_decay_exclusions)}

    def _clip_gradients(self, grads):
        # An embedding gradient arrives as IndexedSlices holding one row per token, repeated
        # for repeated tokens. Keras squares each repeat on its own, which is not the norm of
        # the gradient (nor what one-hot embeddings, whose gradient is dense, get). Densify
        # first; the update is dense anyway (AdamW decays every row's moments).
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
            if self.global_clipnorm:
                return self._clip_by_global_norm(grads)
        return super()._clip_gradients(grads)

    def _clip_by_global_norm(self, grads):
        # Keras writes every gradient's squares out before summing them; l2_loss reads each
        # gradient once (a quarter less time for BERT-base's 110M values on CPU, and no
        # gradient-sized temporaries).
        import tensorflow as tf

        norm = tf.sqrt(2.0 * tf.add_n(
            [tf.nn.l2_loss(tf.cast(g, "float32")) for g in grads if g is not None]))
        # Keras's rule: shrink to the clip norm; a non-finite norm makes every value NaN.
        scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm)
        scale += norm - norm
        return [None if g is None else g * tf.cast(scale, g.dtype) for g in grads]


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertAdamW(_BertOptimizerMixin, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with BERT's defaults: weight decay 0.01 except on LayerNorm
    weights and biases, epsilon 1e-6, betas 0.9/0.999, gradients clipped to global norm 1.

    Args:
        learning_rate: a float or a `LearningRateSchedule` (see `create_optimizer`).
        weight_decay: decoupled weight decay rate.
        epsilon: Adam's epsilon.
        global_clipnorm: clip all gradients together to this global norm; `None` for none.
        weight_decay_exclusions: regular expressions; a variable whose name matches one is
            not decayed. Saved with the optimizer's config.
        **kwargs: any other `keras.optimizers.AdamW` argument (`beta_1`, `beta_2`,
            `gradient_accumulation_steps`, ...).

    Example:
    >>> import numpy as np
    >>> norm = keras.layers.LayerNormalization()
    >>> norm.build((None, 4))
    >>> optimizer = BertAdamW(learning_rate=0.1, weight_decay=0.5)
    >>> optimizer.apply([np.zeros(4, "float32")], [norm.gamma])
    >>> norm.gamma.numpy().tolist()  # excluded: zero gradients leave it unchanged
    [1.0, 1.0, 1.0, 1.0]
    """

    def update_step(self, gradient, variable, learning_rate):
        # Keras's Adam step is about ten element-wise passes over each variable and its two
        # moments; TensorFlow's ResourceApplyAdam kernel does the same arithmetic in one,
        # which matters on CPU, where the optimizer is memory-bound (`keras_adamw` in
        # bench/ablations.py).
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        index = self._get_variable_index(variable)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle,
            v=self._velocities[index].handle, beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step), lr=tf.cast(learning_rate, dtype),
            beta1=beta_1, beta2=beta_2, epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype))


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertLamb(_BertOptimizerMixin, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with BERT's defaults (as `BertAdamW`), for large-batch pretraining.

    Keras's LAMB differs from the LAMB paper's (and Model Garden's) in two ways: weight decay
    is decoupled, applied as `w -= lr * weight_decay * w` before the step rather than added to
    the update inside the trust ratio; and the layer-wise trust ratio applies to every
    variable, LayerNorm weights and biases included. The exclusions here apply to weight
    decay only.

    Args: as `BertAdamW`; `**kwargs` takes any other `keras.optimizers.Lamb` argument.

    Example:
    >>> optimizer = BertLamb(learning_rate=1e-3)
    >>> BertLamb.from_config(optimizer.get_config()).weight_decay_exclusions == (
    ...     optimizer.weight_decay_exclusions)
    True
    """
