"""Where `models/task.py` still imports `BertAdamW` from (its compile default); the optimizers
live in `keras_bert_core.training.optimizers`. Goes once that import names the new module.
"""

from keras_bert_core.training.optimizers import BertAdamW

__all__ = ["BertAdamW"]
