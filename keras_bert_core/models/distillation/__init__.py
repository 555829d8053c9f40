"""Knowledge distillation: `Distiller` trains a student task model (or pretrainer) on a
frozen teacher's soft targets with `fit`; `make_distilbert_student` makes a student of
every other teacher layer, weights copied (DistilBERT's initialization).

The loss, for a teacher and a student of the same kind:

    alpha * hard + (1 - alpha) * soft + hidden_weight * hidden + attention_weight * attention

- hard: the student's own default loss on the labels (its `compile` loss);
- soft: KL(softmax(teacher / T) || softmax(student / T)) * T**2 over the classes, the
  start and end positions, each token's tags, the choices or the masked-LM vocabulary (a
  regression classifier: the mean squared difference to the teacher's scores);
- hidden: MSE or cosine distance between the last layers' sequence outputs at real tokens,
  the student's through a learned dense projection when the widths differ;
- attention: MiniLM's last-layer attention transfer, KL between the teacher's and the
  student's attention probabilities at real query tokens (head by head with equal head
  counts, else averaged over the heads).

Means over tokens divide by the count over all replicas, so a step under a `tf.distribute`
strategy computes the same loss as on one device.

`EmbeddingDistiller` trains a student `BertEmbedder` on the mean squared error between its
vectors and the teacher's, on unlabeled text (sentence-transformers' model distillation).
"""

from keras_bert_core.models.distillation.distiller import TEACHER_OUTPUTS, Distiller
from keras_bert_core.models.distillation.embedding import EmbeddingDistiller
from keras_bert_core.models.distillation.losses import distillation_kl
from keras_bert_core.models.distillation.pairs import check_vocabularies
from keras_bert_core.models.distillation.student import make_distilbert_student

__all__ = ["TEACHER_OUTPUTS", "Distiller", "EmbeddingDistiller", "check_vocabularies",
           "distillation_kl",
           "make_distilbert_student"]
