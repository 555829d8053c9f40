"""BERT's optimizers: AdamW (or LAMB) with warmup and linear decay, clipping, accumulation."""


from keras_bert_core.optimizers import NO_WEIGHT_DECAY, BertAdamW, BertLamb
from keras_bert_core.training.schedule import WarmupLinearDecay

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
