"""keras_bert_core: BERT as Keras 3 layers, trained with model.fit, exported with its tokenizer.

>>> import keras_bert_core as kbc
>>> kbc.BertConfig.preset("base").hidden_size
768

Public names load on first use, so `kbc --help` answers without starting TensorFlow (and
`kbc` sets TensorFlow's environment before it starts). Yet every class Keras serializes is
registered once Keras is there: at once if Keras is imported already, else as soon as
Keras (or TensorFlow, which imports it) has been imported, so that
`import keras_bert_core; keras.saving.load_model("model.keras")` finds them.
"""

import importlib
import importlib.abc
import sys

__version__ = "0.1.0"

# Public name -> module that defines it.
_EXPORTS = {
    "BertConfig": "keras_bert_core.config",
    "PRESETS": "keras_bert_core.config",
    "BertEncoder": "keras_bert_core.models",
    "BertPretrainer": "keras_bert_core.models",
    "ElectraPretrainer": "keras_bert_core.models",
    "BertClassifier": "keras_bert_core.models",
    "BertMultiLabelClassifier": "keras_bert_core.models",
    "BertSpanLabeler": "keras_bert_core.models",
    "BertTokenClassifier": "keras_bert_core.models",
    "BertMultipleChoice": "keras_bert_core.models",
    "BertEmbedder": "keras_bert_core.models",
    "Distiller": "keras_bert_core.models",
    "EmbeddingDistiller": "keras_bert_core.models",
    "ContrastiveLoss": "keras_bert_core.models",
    "CosineSimilarityLoss": "keras_bert_core.models",
    "TripletLoss": "keras_bert_core.models",
    "MatryoshkaLoss": "keras_bert_core.models",
    "make_distilbert_student": "keras_bert_core.models",
    "enable_lora": "keras_bert_core.models",
    "save_lora_weights": "keras_bert_core.models",
    "load_lora_weights": "keras_bert_core.models",
    "merge_lora": "keras_bert_core.models",
    "lora_summary": "keras_bert_core.models",
    "cache_teacher_outputs": "keras_bert_core.training.teacher_outputs",
    "load_teacher_outputs": "keras_bert_core.training.teacher_outputs",
    "export_saved_model": "keras_bert_core.export",
    "export_tflite": "keras_bert_core.export",
    "distribution_strategy": "keras_bert_core.training",
    "training_callbacks": "keras_bert_core.training",
    "fit_resumable": "keras_bert_core.training",
    "WarmupLinearDecay": "keras_bert_core.optimizers",
    "BertAdamW": "keras_bert_core.optimizers",
    "BertLamb": "keras_bert_core.optimizers",
    "create_optimizer": "keras_bert_core.optimizers",
    "BertTokenizer": "keras_bert_core.text",
    "BytePairTokenizer": "keras_bert_core.text",
    "SentencePieceTokenizer": "keras_bert_core.text",
    "DebertaTokenizer": "keras_bert_core.text",
    "XlmRobertaTokenizer": "keras_bert_core.text",
    "BertPacker": "keras_bert_core.text",
    "BertPreprocessor": "keras_bert_core.text",
    "LongTextPreprocessor": "keras_bert_core.text",
    "load_vocabulary": "keras_bert_core.text",
    "MaskedLMMasker": "keras_bert_core.pretraining.masking",
    "pretraining_dataset": "keras_bert_core.pretraining.data",
    "write_pretraining_tfrecords": "keras_bert_core.pretraining.tfrecords",
    "read_pretraining_tfrecords": "keras_bert_core.pretraining.tfrecords",
    "learn_wordpiece_vocab": "keras_bert_core.text.vocabulary.learning",
    "DataError": "keras_bert_core.errors",
    "load_text_classification": "keras_bert_core.tasks",
    "load_squad": "keras_bert_core.tasks",
    "load_conll": "keras_bert_core.tasks",
    "load_tfds_task": "keras_bert_core.tasks",
    "load_checkpoint": "keras_bert_core.checkpoints",
    "load_pretrainer": "keras_bert_core.checkpoints",
    "convert_checkpoint": "keras_bert_core.checkpoints",
    "read_pretraining_head_weights": "keras_bert_core.checkpoints",
    "save_google_research_checkpoint": "keras_bert_core.checkpoints",
    "save_huggingface_checkpoint": "keras_bert_core.checkpoints",
    "save_sentence_transformers": "keras_bert_core.checkpoints",
    "from_preset": "keras_bert_core.presets",
    "save_to_preset": "keras_bert_core.presets",
    "ConfigError": "keras_bert_core.errors",
    "CheckpointError": "keras_bert_core.errors",
    "CheckpointMismatchError": "keras_bert_core.errors",
    "TrainingError": "keras_bert_core.errors",
    "VocabularyMismatchError": "keras_bert_core.errors",
    "MissingDependencyError": "keras_bert_core.errors",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


# Subpackages load on first use too (`kbc.training.distribution_strategy(...)`).
_SUBPACKAGES = ("checkpoints", "cli", "export", "layers", "models", "presets", "pretraining",
                "tasks", "text", "training")


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"keras_bert_core.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'keras_bert_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__


# The packages whose modules register the classes Keras serializes (optimizers and
# schedules, layers, models, text layers, the masked-LM masker). Registering also mends
# Keras's cache of what its saving skips (`keras_internals.cache_saving_skipsets`).
_REGISTERING = ("keras_bert_core.optimizers", "keras_bert_core.layers", "keras_bert_core.models",
                "keras_bert_core.text", "keras_bert_core.pretraining")
# Keras's imports: each imports the other.
_KERAS_MODULES = ("keras", "tensorflow")


def _register_keras_classes():
    for name in _REGISTERING:
        importlib.import_module(name)
    importlib.import_module("keras_bert_core.keras_internals").cache_saving_skipsets()


class _RegisterAfterKeras(importlib.abc.MetaPathFinder):
    """Registers the package's Keras classes once Keras is imported and no import of Keras,
    TensorFlow or a module of this package is under way (each may import the others: none
    may be half-imported then), then leaves `sys.meta_path`."""

    def __init__(self):
        self.depth = 0

    def find_spec(self, name, path, target=None):
        if name not in _KERAS_MODULES and not name.startswith(__name__ + "."):
            return None
        spec = next((spec for finder in sys.meta_path if finder is not self
                     and hasattr(finder, "find_spec")
                     for spec in [finder.find_spec(name, path, target)] if spec is not None),
                    None)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader, self)
        return spec


class _ThenRegister(importlib.abc.Loader):
    """A loader that runs `loader`, then the registration once no Keras import is under way."""

    def __init__(self, loader, finder):
        self.loader = loader
        self.finder = finder

    def __getattr__(self, name):  # resource readers and the like: the real loader's
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.finder.depth += 1
        try:
            self.loader.exec_module(module)
        finally:
            self.finder.depth -= 1
        if (self.finder.depth == 0 and "keras" in sys.modules
                and self.finder in sys.meta_path):
            sys.meta_path.remove(self.finder)
            _register_keras_classes()


if "keras" in sys.modules:
    _register_keras_classes()
else:
    sys.meta_path.insert(0, _RegisterAfterKeras())
