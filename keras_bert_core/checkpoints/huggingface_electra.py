"""Where ELECTRA's Hugging Face weights live: BERT's layer names under `electra.`, the
factorized embeddings' projection as `embeddings_project`, the generator's masked-LM head
(`ElectraForMaskedLM`) and the discriminator's replaced-token head (`ElectraForPreTraining`)."""

from keras_bert_core.checkpoints.weights import Source

# `huggingface._FAMILIES`' entry: model prefix, encoder scopes, renames of BERT's layer names,
# and the generator's head (dense -> GELU -> LayerNorm, its decoder tied to the word table).
FAMILY = {"prefix": "electra.", "scopes": ("embeddings.", "embeddings_project.", "encoder."),
          "renames": [(r"^embeddings/projection/", "embeddings_project.")],
          "mlm": ("generator_predictions.dense", "generator_predictions.LayerNorm",
                  "generator_lm_head.bias"),
          "nsp": None}

# The discriminator's head: dense -> activation -> one logit per token.
RTD_SOURCES = {
    "rtd/dense/kernel": Source("discriminator_predictions.dense.weight", transpose=True),
    "rtd/dense/bias": Source("discriminator_predictions.dense.bias"),
    "rtd/output/kernel": Source("discriminator_predictions.dense_prediction.weight",
                                transpose=True),
    "rtd/output/bias": Source("discriminator_predictions.dense_prediction.bias"),
}
