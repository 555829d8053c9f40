"""The serving adapters live in `keras_bert_core.tasks` (`keras_bert_core.tasks.serving`
chooses one); this name stays for `saved_model.py` and `tflite.py`, which import it here."""

from keras_bert_core.tasks.serving import serving_task

__all__ = ["serving_task"]
