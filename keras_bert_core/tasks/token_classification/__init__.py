"""Token classification (`BertTokenClassifier`) on CoNLL data: one module per concept.

- `conll`: `TaggingData` and `load_conll`, token-per-line files;
- `features`: `tagging_features` splits words into pieces and labels only the first piece
  of each word (every other position gets -100, which the token classifier's loss ignores);
- `decoding`: `predictions_to_tags` maps per-token predictions back to one tag per word, and
  `answers` pairs them with the words;
- `scores`: entity-level scores (`entity_scores`), as conlleval and seqeval's default mode
  count them;
- `serving`: `TokenTagging` serves the model from raw text.
"""

from keras_bert_core.tasks.token_classification.conll import TaggingData, load_conll
from keras_bert_core.tasks.token_classification.decoding import answers, predictions_to_tags
from keras_bert_core.tasks.token_classification.features import (
    TaggingFeatures,
    tagging_features,
)
from keras_bert_core.tasks.token_classification.scores import entity_scores, get_entities
from keras_bert_core.tasks.token_classification.serving import TokenTagging

__all__ = [
    "TaggingData",
    "TaggingFeatures",
    "TokenTagging",
    "answers",
    "entity_scores",
    "get_entities",
    "load_conll",
    "predictions_to_tags",
    "tagging_features",
]
