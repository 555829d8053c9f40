"""Training: BERT's optimizers and schedule, distribution strategies, fault-tolerant callbacks."""

from keras_bert_core.errors import TrainingError
from keras_bert_core.training.callbacks import (
    MetricsLogger,
    StepBackup,
    StopOnNonFiniteLoss,
    completed_steps,
    fit_resumable,
    training_callbacks,
)
from keras_bert_core.training.distribution import (
    STRATEGIES,
    KerasMultiWorkerMirroredStrategy,
    distribution_strategy,
    per_replica_batch_size,
    worker_role,
)
from keras_bert_core.training.optimizers import (
    NO_WEIGHT_DECAY,
    BertAdamW,
    BertLamb,
    WarmupLinearDecay,
    create_optimizer,
)

__all__ = [
    "NO_WEIGHT_DECAY",
    "STRATEGIES",
    "BertAdamW",
    "BertLamb",
    "KerasMultiWorkerMirroredStrategy",
    "MetricsLogger",
    "StepBackup",
    "StopOnNonFiniteLoss",
    "TrainingError",
    "WarmupLinearDecay",
    "completed_steps",
    "create_optimizer",
    "distribution_strategy",
    "fit_resumable",
    "per_replica_batch_size",
    "training_callbacks",
    "worker_role",
]
