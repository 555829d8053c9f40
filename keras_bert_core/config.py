"""`BertConfig`: the hyperparameters of a BERT network (and of RoBERTa, ALBERT,
DistilBERT, ModernBERT and DeBERTa-v3, which are configurations of the same layers), with
named presets.

The JSON form reads and writes both Hugging Face `config.json` and google-research
`bert_config.json` (they share BERT's original key names), and reads Hugging Face's
RoBERTa, ALBERT, DistilBERT, ModernBERT and DeBERTa-v2/v3 `config.json`.
"""

from __future__ import annotations

import dataclasses
import json
import os

from keras_bert_core.errors import ConfigError, VocabularyMismatchError
from keras_bert_core.families import FAMILIES, JSON_ALIASES, PRESETS, huggingface_settings

# BERT's original key names (google-research and Hugging Face) -> our field names.
_JSON_ALIASES = {
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_dropout_prob": "dropout",
    "attention_probs_dropout_prob": "attention_dropout",
}
_ACTIVATIONS = ("gelu", "gelu_approximate", "relu", "tanh")
# Hugging Face spellings of the tanh-approximate GELU.
_ACTIVATION_ALIASES = {"gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate",
                       "gelu_fast": "gelu_approximate"}


@dataclasses.dataclass
class BertConfig:
    """Hyperparameters of a BERT encoder.

    Args:
        vocab_size: WordPiece vocabulary size.
        hidden_size: width of every transformer layer.
        num_layers: number of transformer blocks.
        num_heads: attention heads per block; must divide `hidden_size`.
        intermediate_size: width of the feed-forward layer.
        hidden_act: `"gelu"` (exact erf, BERT's), `"gelu_approximate"` (tanh), `"relu"`, `"tanh"`.
        dropout: dropout on embeddings and on every residual branch.
        attention_dropout: dropout on attention probabilities.
        max_position_embeddings: longest sequence the position table covers.
        type_vocab_size: number of segment (token type) ids.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon (1e-12 in BERT).
        position_embedding: `"learned"` (BERT), `"sinusoidal"` (fixed, no weights),
            `"rotary"` (ModernBERT: no table; queries and keys rotate by position in every
            attention layer, by `rotary_theta`) or `"relative"` (DeBERTa: no absolute
            positions; every layer's disentangled attention reads a shared table of
            log-bucketed relative positions, `position_buckets` and
            `max_relative_positions`).
        embedding_size: ALBERT-style factorized embedding width, projected up to
            `hidden_size`; `None` means `hidden_size`.
        norm_first: pre-LayerNorm blocks (plus a final LayerNorm) instead of BERT's post-LN.
        position_offset: the position id of the first token (RoBERTa: 2, the padding id + 1;
            its table has `max_position_embeddings` rows including the offset).
        num_layer_groups: ALBERT's weight sharing: the `num_layers` blocks share this many
            sets of weights, consecutive layers using the same group; `None`: every block
            its own.
        pooler: whether the encoder has BERT's dense+tanh `pooled_output` (DistilBERT has
            none).
        classifier_activation: the sequence classifier's head. `None`: dropout and a dense
            layer on the pooled output (BERT, ALBERT); `"tanh"` (RoBERTa) or `"relu"`
            (DistilBERT): a hidden dense layer with that activation on the first token's
            output, then the dense layer to the classes.
        family: `"bert"`, `"roberta"`, `"albert"`, `"distilbert"`, `"modernbert"` or
            `"deberta"` (DeBERTa-v2/v3), or `"xlm-roberta"` (XLM-RoBERTa): which
            family's files a checkpoint of this configuration uses (weight names,
            `model_type`). A `type_vocab_size` of 0 means no segment embeddings (DistilBERT,
            ModernBERT).
        use_bias: whether dense layers and LayerNorms have biases (ModernBERT's have none).
        gated_feed_forward: the feed-forward's first layer is `2 * intermediate_size` wide
            and its second half gates the activated first (GeGLU with GELU, ModernBERT's).
        rotary_theta: the rotary base of the global attention layers (`"rotary"` positions).
        local_rotary_theta: the rotary base of the local (sliding-window) layers.
        local_attention_window: the sliding window of the local layers, in tokens: a token
            attends to those at most half of it away (ModernBERT: 128). `None`: every layer
            attends globally.
        global_attention_every: with a window, layers 0, n, 2n... attend globally and the
            others locally.
        first_block_attention_norm: whether the first pre-LN block normalizes its attention
            input (ModernBERT's does not: its embeddings end with a norm).
        classifier_pooling: what the sequence classifier reads: `"cls"` (the first token) or
            `"mean"` (the mean over real tokens; ModernBERT's option).
        position_buckets: with `"relative"` positions, the buckets on each side of 0
            (DeBERTa-v3: 256; the table has twice as many rows).
        max_relative_positions: with `"relative"` positions, the distance the log-scaled
            buckets reach their last at (DeBERTa-v3: 512).

    Example:
    >>> cfg = BertConfig.preset("tiny")
    >>> cfg.hidden_size, cfg.num_layers
    (128, 2)
    >>> BertConfig.from_dict(cfg.to_dict()) == cfg
    True
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    position_embedding: str = "learned"
    embedding_size: int | None = None
    norm_first: bool = False
    position_offset: int = 0
    num_layer_groups: int | None = None
    pooler: bool = True
    classifier_activation: str | None = None
    family: str = "bert"
    use_bias: bool = True
    gated_feed_forward: bool = False
    rotary_theta: float = 10000.0
    local_rotary_theta: float = 10000.0
    local_attention_window: int | None = None
    global_attention_every: int = 1
    first_block_attention_norm: bool = True
    classifier_pooling: str = "cls"
    position_buckets: int = 256
    max_relative_positions: int = 512

    def __post_init__(self):
        self.hidden_act = _ACTIVATION_ALIASES.get(self.hidden_act, self.hidden_act)
        problems = []
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                     "max_position_embeddings", "position_buckets", "max_relative_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        for name in ("type_vocab_size", "position_offset"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{name} must be a non-negative integer, got {value!r}")
        groups = self.num_layer_groups
        if groups is not None and (not isinstance(groups, int) or not 0 < groups
                                   or isinstance(self.num_layers, int)
                                   and groups > self.num_layers):
            problems.append(f"num_layer_groups must be None or 1..num_layers, got {groups!r}")
        if self.classifier_activation not in (None, *_ACTIVATIONS):
            problems.append(f"classifier_activation {self.classifier_activation!r} is not "
                            f"None or one of {_ACTIVATIONS}")
        if self.classifier_activation is None and not self.pooler:
            problems.append("a configuration without a pooler classifies the first token: "
                            "set classifier_activation")
        if self.family not in FAMILIES:
            problems.append(f"family {self.family!r} is not one of {FAMILIES}")
        if not problems and self.hidden_size % self.num_heads:
            problems.append(f"hidden_size {self.hidden_size} is not divisible by "
                            f"num_heads {self.num_heads}")
        if self.hidden_act not in _ACTIVATIONS:
            problems.append(f"hidden_act {self.hidden_act!r} is not one of {_ACTIVATIONS}")
        if self.position_embedding not in ("learned", "sinusoidal", "rotary", "relative"):
            problems.append("position_embedding must be 'learned', 'sinusoidal', 'rotary' or "
                            f"'relative', got {self.position_embedding!r}")
        window, every = self.local_attention_window, self.global_attention_every
        if window is not None and (not isinstance(window, int) or window < 2):
            problems.append(f"local_attention_window must be None or an integer >= 2, "
                            f"got {window!r}")
        if not isinstance(every, int) or every < 1:
            problems.append(f"global_attention_every must be a positive integer, got {every!r}")
        if self.classifier_pooling not in ("cls", "mean"):
            problems.append(f"classifier_pooling must be 'cls' or 'mean', "
                            f"got {self.classifier_pooling!r}")
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                problems.append(f"{name} must be in [0, 1), got {getattr(self, name)!r}")
        if self.embedding_size is not None and self.embedding_size <= 0:
            problems.append(f"embedding_size must be positive or None, got {self.embedding_size!r}")
        if problems:
            raise ConfigError("Invalid BertConfig: " + "; ".join(problems))

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    def is_global_layer(self, index) -> bool:
        """Whether layer `index` attends over the whole sequence (not within the window)."""
        return self.local_attention_window is None or index % self.global_attention_every == 0

    @property
    def chunked_attention(self) -> bool:
        """Whether the encoder attends through `layers.chunked_attention.attend` (global
        layers in query chunks, local ones in key bands), never a `[seq, seq]` matrix:
        ModernBERT's, whose inputs run to 8,192 tokens. The other families keep the dense
        route their speed was measured with."""
        return self.family == "modernbert"

    @property
    def max_sequence_length(self) -> int:
        """The longest sequence the position table covers (after `position_offset`)."""
        return self.max_position_embeddings - self.position_offset

    def check_fits(self, vocabulary_size, seq_length, *, vocabulary="the vocabulary",
                   seq_length_name="seq_length", model="the model", exact=True):
        """Raises `VocabularyMismatchError` if a vocabulary does not fill the model's word
        embeddings, `ValueError` if a sequence length exceeds its position table. The names
        say, in the caller's words, what is checked. `exact=False` lets the table have more
        rows than the vocabulary (a model built in Python from a preset's sizes, which its
        training fits to the vocabulary it is given) and refuses only ids with no row.

        The rule is the same for every family: in the checkpoints Hugging Face and Google
        ship (BERT's and DistilBERT's WordPiece vocab.txt, RoBERTa's vocab.json, ALBERT's
        SentencePiece model), the vocabulary has exactly one token per row. A vocabulary
        larger than the table gives ids with no row; a smaller one is cut or belongs to
        another model (every id past its end is unknown, the others may mean other words),
        except for a table padded up to a multiple of 8 to 128 rows for the hardware (as
        NVIDIA's and Megatron's BERT are), whose extra rows no id reaches; DeBERTa-v3's
        table keeps fewer than 128 spare rows past its `[MASK]` (128,100 for 128,001
        tokens).

        >>> BertConfig.preset("tiny", vocab_size=96).check_fits(90, 512)  # padded to 8 * 12
        >>> BertConfig.preset("tiny", vocab_size=30522).check_fits(1000, 512)
        Traceback (most recent call last):
        ...
        keras_bert_core.errors.VocabularyMismatchError: vocabulary and model do not match: the \
vocabulary has 1,000 tokens but the model's word embeddings have 30,522 rows (vocab_size): \
the vocabulary was cut or belongs to another model; use the vocabulary the model was \
trained with
        """
        rows = self.vocab_size
        if vocabulary_size > rows:
            raise VocabularyMismatchError(
                f"vocabulary and model do not match: {vocabulary} has {vocabulary_size:,} "
                f"tokens but {model}'s word embeddings have only {rows:,} rows (vocab_size): "
                f"its ids past {rows - 1:,} have none; use the vocabulary the model was "
                "trained with")
        spare_rows = not exact or (self.family == "deberta" and rows - vocabulary_size < 128)
        if not spare_rows and rows not in (-(-vocabulary_size // multiple) * multiple
                                           for multiple in (1, 8, 16, 32, 64, 128)):
            raise VocabularyMismatchError(
                f"vocabulary and model do not match: {vocabulary} has {vocabulary_size:,} "
                f"tokens but {model}'s word embeddings have {rows:,} rows (vocab_size): the "
                "vocabulary was cut or belongs to another model; use the vocabulary the "
                "model was trained with")
        if seq_length > self.max_sequence_length:
            offset = (f" less the position offset {self.position_offset}"
                      if self.position_offset else "")
            raise ValueError(f"{seq_length_name} {seq_length} exceeds {model}'s "
                             f"max_position_embeddings {self.max_position_embeddings}{offset}")

    @classmethod
    def preset(cls, name: str, **overrides) -> BertConfig:
        """A named configuration: BERT's tiny, mini, small, medium, base, large (Turc et al. /
        BERT paper); roberta_base, roberta_large; xlm_roberta_base, xlm_roberta_large;
        albert_base, albert_large, albert_xlarge, albert_xxlarge (ALBERT v2); distilbert_base;
        modernbert_base, modernbert_large; deberta_v3_xsmall, deberta_v3_small,
        deberta_v3_base, deberta_v3_large; electra_small, electra_base, electra_large
        (ELECTRA's discriminators)."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose from {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> BertConfig:
        """Build from our field names, BERT's original JSON keys or a Hugging Face
        `config.json` of any family (its `model_type` says which); other keys are ignored."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        aliases = {**_JSON_ALIASES, **JSON_ALIASES}
        for key, value in values.items():
            key = aliases.get(key, key)
            if key in fields:
                kwargs[key] = value
        kwargs.update(huggingface_settings(values))
        return cls(**kwargs)

    @classmethod
    def ignored_keys(cls, values: dict) -> list:
        """The keys of `values` that `from_dict` ignores: neither a field nor a known alias
        (a misspelled field, or a Hugging Face file's other settings).

        Example:
        >>> BertConfig.ignored_keys({"num_hidden_layers": 2, "hidden_sise": 64})
        ['hidden_sise']
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        aliases = {**_JSON_ALIASES, **JSON_ALIASES}
        return sorted(key for key in values if aliases.get(key, key) not in fields)

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BertConfig:
        """Read our JSON, a Hugging Face `config.json` or a google-research `bert_config.json`."""
        try:
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a JSON object of BERT hyperparameters")
        try:
            return cls.from_dict(values)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{path}: {e}") from None

    def to_json(self, path: str | os.PathLike) -> None:
        """Write BERT's original key names (readable by Hugging Face and google-research code)."""
        values = self.to_dict()
        for original, ours in _JSON_ALIASES.items():
            values[original] = values.pop(ours)
        if self.hidden_act == "gelu_approximate":
            values["hidden_act"] = "gelu_new"
        values["model_type"] = self.family
        with open(path, "w", encoding="utf-8") as f:
            json.dump(values, f, indent=2, sort_keys=True)
            f.write("\n")
