"""BERT's learning-rate schedule: linear warmup to a peak, then linear decay."""

import keras
from keras import ops


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
