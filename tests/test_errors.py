"""`keras_bert_core.errors` holds every exception class; each home re-exports the same class."""

import keras_bert_core as kbc
from keras_bert_core import errors


def test_each_home_and_the_top_level_name_the_classes_of_errors():
    from keras_bert_core import checkpoints, cli, config, text, training

    homes = {
        "DataError": (text, kbc),
        "ConfigError": (config, kbc),
        "CheckpointError": (checkpoints, kbc),
        "CheckpointMismatchError": (checkpoints, kbc),
        "TrainingError": (training, kbc),
        # What task models (a preprocessor that does not fit) and extras raise in Python.
        "VocabularyMismatchError": (kbc,),
        "MissingDependencyError": (kbc,),
        "UserError": (cli,),
    }
    for name, modules in homes.items():
        for module in modules:
            assert getattr(module, name) is getattr(errors, name), (module.__name__, name)
