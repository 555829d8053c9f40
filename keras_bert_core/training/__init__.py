"""Training: distribution strategies, fault-tolerant callbacks, and BERT's optimizers and schedule
(which live in `keras_bert_core.optimizers`, below the models that compile with them)."""

from keras_bert_core.errors import TrainingError
from keras_bert_core.optimizers import (
    NO_WEIGHT_DECAY,
    BertAdamW,
    BertLamb,
    WarmupLinearDecay,
    create_optimizer,
)
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
