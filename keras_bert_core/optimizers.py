"""BERT's optimizers: AdamW and LAMB whose weight-decay exclusions survive saving, the
warmup + linear decay schedule, and `create_optimizer`, which puts them together.
"""

import keras
from keras import ops

from keras_bert_core.keras_internals import WeightDecayInUpdateStep, adam_moments

# Matched (as regular expressions) against a variable's short name: Keras 3 names LayerNorm
# weights "gamma"/"beta" and biases "bias"; the TF1-style spellings cover converted models.
NO_WEIGHT_DECAY = ("bias", "gamma", "beta", "layer_norm", "LayerNorm")


class _BertOptimizerMixin(WeightDecayInUpdateStep):
    """BERT's defaults, and weight-decay exclusions that survive `get_config`: a plain Keras
    optimizer forgets `exclude_from_weight_decay` when saved, so a reloaded model would decay
    its LayerNorm weights and biases. The decay is applied in each variable's update."""

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
        # gradient once and keeps no gradient-sized temporaries (`keras_adamw` in
        # bench/ablations.py times Keras's update, its clipping included, against this one).
        import tensorflow as tf

        norm = tf.sqrt(2.0 * tf.add_n(
            [tf.nn.l2_loss(tf.cast(g, "float32")) for g in grads if g is not None]))
        # Keras's rule: shrink to the clip norm; a non-finite norm makes every value NaN.
        scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm)
        scale += norm - norm
        return [None if g is None else g * tf.cast(scale, g.dtype) for g in grads]


class BuildsOptimizerFirst:
    """Mixin of the package's models: `fit` creates the optimizer's variables before it
    traces the train step.

    Without a distribution strategy Keras creates them inside the first trace of the step,
    and TensorFlow then traces the whole step a second time (a `tf.function` whose first
    trace creates variables is traced again): twice the start-up of every `fit`.

    Example:
    >>> import numpy as np
    >>> class Model(BuildsOptimizerFirst, keras.Sequential):
    ...     pass
    >>> model = Model([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("adam", "mse")
    >>> model.optimizer.built
    False
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    >>> model.optimizer.built
    True
    """

    def make_train_function(self, force=False):
        if self.optimizer is not None and not self.optimizer.built:
            with self.distribute_strategy.scope():
                self.optimizer.build(self.trainable_variables)
        return super().make_train_function(force)


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

    def apply(self, grads, trainable_variables=None):
        self._step_scalars = {}  # this update's, by dtype: see `_adam_scalars`
        return super().apply(grads, trainable_variables)

    def update_step(self, gradient, variable, learning_rate):
        # Keras's Adam step is about ten element-wise passes over each variable and its two
        # moments; TensorFlow's ResourceApplyAdam kernel does the same arithmetic in one,
        # which matters on CPU, where the optimizer is memory-bound (`keras_adamw` in
        # bench/ablations.py).
        self.decay_weight(variable, learning_rate)
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        momentum, velocity = adam_moments(self, variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=momentum.handle, v=velocity.handle,
            **self._adam_scalars(dtype, learning_rate),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype))

    def _adam_scalars(self, dtype, learning_rate):
        # The same for every variable of one update: made once per update (and per traced
        # step), not once per variable (`bench/first_fit.py`).
        import tensorflow as tf

        scalars = getattr(self, "_step_scalars", {})
        if dtype not in scalars:
            step = tf.cast(self.iterations + 1, dtype)
            beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
            scalars[dtype] = {
                "beta1_power": tf.pow(beta_1, step), "beta2_power": tf.pow(beta_2, step),
                "lr": tf.cast(learning_rate, dtype), "beta1": beta_1, "beta2": beta_2,
                "epsilon": tf.cast(self.epsilon, dtype)}
        return scalars[dtype]


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

    def update_step(self, gradient, variable, learning_rate):
        self.decay_weight(variable, learning_rate)
        super().update_step(gradient, variable, learning_rate)


@keras.saving.register_keras_serializable(package="keras_bert_core")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Rises linearly from 0 to `peak_learning_rate` over `warmup_steps`, then falls linearly
    to `end_learning_rate` at `decay_steps`, and stays there.

    `lr(step) = peak * step / warmup_steps` during warmup, then
    `end + (peak - end) * (decay_steps - step) / (decay_steps - warmup_steps)`. The decay starts
    from the peak, so the curve is continuous (google-research BERT decays from step 0 and
    jumps down at the end of warmup; the difference is a factor `1 - warmup/total`).

    Args:
        peak_learning_rate: the learning rate at the end of warmup.
        decay_steps: the step at which the learning rate reaches `end_learning_rate`
            (the total number of training steps).
        warmup_steps: steps of linear warmup; 0 starts at the peak.
        end_learning_rate: the learning rate from `decay_steps` on.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, decay_steps=100, warmup_steps=10)
    >>> [round(float(schedule(step)), 8) for step in (0, 5, 10, 55, 100, 200)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate, decay_steps, warmup_steps=0, end_learning_rate=0.0):
        problems = []
        if peak_learning_rate <= 0:
            problems.append(f"peak_learning_rate must be positive, got {peak_learning_rate!r}")
        if not 0 <= end_learning_rate <= peak_learning_rate:
            problems.append(f"end_learning_rate must be in [0, peak_learning_rate], "
                            f"got {end_learning_rate!r}")
        if warmup_steps < 0:
            problems.append(f"warmup_steps must be >= 0, got {warmup_steps!r}")
        if decay_steps <= warmup_steps:
            problems.append(f"decay_steps ({decay_steps!r}) must be larger than "
                            f"warmup_steps ({warmup_steps!r})")
        if problems:
            raise ValueError("Invalid WarmupLinearDecay: " + "; ".join(problems))
        self.peak_learning_rate = peak_learning_rate
        self.decay_steps = decay_steps
        self.warmup_steps = warmup_steps
        self.end_learning_rate = end_learning_rate

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak, end = self.peak_learning_rate, self.end_learning_rate
        # max(..., 1) keeps warmup_steps=0 free of a division by zero; the branch is unused.
        warmup = peak * step / max(self.warmup_steps, 1)
        remaining = ops.clip((self.decay_steps - step) / (self.decay_steps - self.warmup_steps),
                             0.0, 1.0)
        decay = end + (peak - end) * remaining
        return ops.where(step < self.warmup_steps, warmup, decay)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
        }


_OPTIMIZERS = {"adamw": BertAdamW, "lamb": BertLamb}


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer="adamw",
                     weight_decay=0.01, clipnorm=1.0, gradient_accumulation_steps=None,
                     end_learning_rate=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                     weight_decay_exclusions=NO_WEIGHT_DECAY):
    """BERT's optimizer: AdamW (or LAMB) on a `WarmupLinearDecay` schedule.

    The result saves and reloads with the model (schedule and exclusions included). Under a
    `"mixed_float16"` model, `model.compile` wraps it in a `LossScaleOptimizer` by itself.

    Args:
        learning_rate: the peak learning rate, reached at the end of warmup.
        num_train_steps: optimizer updates in the whole run; the learning rate reaches
            `end_learning_rate` there.
        num_warmup_steps: optimizer updates of linear warmup.
        optimizer: `"adamw"` (`BertAdamW`) or `"lamb"` (`BertLamb`).
        weight_decay: decoupled weight decay rate (0 for none).
        clipnorm: clip all gradients together to this global norm (`global_clipnorm`);
            `None` for no clipping.
        gradient_accumulation_steps: average the gradients of this many batches into each
            update (a batch `k` times larger in the memory of one). Keras counts every batch
            in the schedule's step, so the schedule is stretched by this factor here;
            `num_train_steps` and `num_warmup_steps` still count updates.
        end_learning_rate: the learning rate at and after `num_train_steps`.
        beta_1, beta_2, epsilon: the Adam moments' decay rates and epsilon.
        weight_decay_exclusions: regular expressions for variable names never decayed.

    Example:
    >>> optimizer = create_optimizer(5e-5, num_train_steps=1000, num_warmup_steps=100)
    >>> type(optimizer).__name__, optimizer.global_clipnorm
    ('BertAdamW', 1.0)
    """
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(_OPTIMIZERS)}, got {optimizer!r}")
    if num_train_steps <= num_warmup_steps:
        raise ValueError(f"num_train_steps ({num_train_steps}) must be larger than "
                         f"num_warmup_steps ({num_warmup_steps})")
    if gradient_accumulation_steps is not None and gradient_accumulation_steps < 1:
        raise ValueError("gradient_accumulation_steps must be a positive integer or None, "
                         f"got {gradient_accumulation_steps!r}")
    accumulation = gradient_accumulation_steps or 1
    schedule = WarmupLinearDecay(
        learning_rate, decay_steps=num_train_steps * accumulation,
        warmup_steps=num_warmup_steps * accumulation, end_learning_rate=end_learning_rate)
    return _OPTIMIZERS[optimizer](
        learning_rate=schedule,
        weight_decay=weight_decay or None,
        epsilon=epsilon,
        global_clipnorm=clipnorm,
        weight_decay_exclusions=weight_decay_exclusions,
        beta_1=beta_1,
        beta_2=beta_2,
        # Keras takes None (not 1) for no accumulation.
        gradient_accumulation_steps=gradient_accumulation_steps if accumulation > 1 else None,
    )
