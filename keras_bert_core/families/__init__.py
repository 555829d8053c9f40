"""The BERT family, one module per member: its named presets (`BertConfig.preset`) and the
fields its Hugging Face `config.json` implies (read by `BertConfig.from_dict`).

A new member adds a module with `MODEL_TYPES` (Hugging Face's `model_type` values it
reads), `PRESETS` and `huggingface_settings(values)`, and lists it in `_MEMBERS`."""

from keras_bert_core.families import (
    albert,
    bert,
    deberta,
    distilbert,
    electra,
    modernbert,
    roberta,
    xlm_roberta,
)

_MEMBERS = (bert, roberta, albert, distilbert, modernbert, deberta, xlm_roberta, electra)

FAMILIES = ("bert", "roberta", "albert", "distilbert", "modernbert", "deberta", "xlm-roberta",
            "electra")
# Members with RoBERTa's architecture and weight names.
ROBERTA_ARCHITECTURE = ("roberta", "xlm-roberta")
PRESETS = {name: values for member in _MEMBERS for name, values in member.PRESETS.items()}
# Members' own `config.json` key names -> our field names.
JSON_ALIASES = {key: ours for member in _MEMBERS for key, ours in
                getattr(member, "ALIASES", {}).items()}
_BY_MODEL_TYPE = {model_type: member for member in _MEMBERS
                  for model_type in member.MODEL_TYPES}


def huggingface_settings(values):
    """Our fields implied by a Hugging Face `config.json` of any member (its `model_type`
    says which; none or an unknown one: BERT's)."""
    member = _BY_MODEL_TYPE.get(values.get("model_type"), bert)
    return member.huggingface_settings(values)
