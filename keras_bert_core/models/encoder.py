"""`BertEncoder`: the BERT network as a functional Keras model."""

import keras

from keras_bert_core.config import BertConfig
from keras_bert_core.layers.attention import attention_bias
from keras_bert_core.layers.embeddings import BertEmbeddings, document_positions
from keras_bert_core.layers.layer_norm import LayerNorm
from keras_bert_core.layers.relative_positions import RelativeEmbeddings
from keras_bert_core.layers.transformer import TransformerEncoderBlock

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def encoder_inputs(name_prefix=""):
    """The encoder's symbolic int32 inputs, any batch size and sequence length."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name_prefix + name)
            for name in INPUT_NAMES}


def _encode(config, inputs, embeddings, blocks, final_norm, pooler, output_positions=None,
            output_encoder_outputs=False, training=None, return_attention=False,
            relative_embeddings=None):
    """The encoder's computation on its layers (see `BertEncoder.encode`)."""
    # Only the opt-in paths pass these arguments: the default graph is unchanged.
    kwargs = {} if training is None else {"training": training}
    positions = document_positions(inputs["padding_mask"])
    if config.position_embedding in ("rotary", "relative"):
        kwargs["position_ids"] = positions
    x = embeddings(inputs["token_ids"], inputs["segment_ids"], positions,
                   **({} if training is None else {"training": training}))
    if relative_embeddings is not None:
        kwargs["relative_embeddings"] = relative_embeddings(
            x, **({} if training is None else {"training": training}))
    # While training (or inside `real_tokens_only`), each block's feed-forward half runs
    # on the real tokens' rows alone.
    kwargs["token_mask"] = inputs["padding_mask"]
    last_kwargs = {**kwargs, "return_attention": True} if return_attention else kwargs
    if config.chunked_attention:
        bias = None  # each block attends in chunks or bands from the mask
        kwargs["padding_mask"] = inputs["padding_mask"]
        last_kwargs = {**last_kwargs, "padding_mask": inputs["padding_mask"]}
    else:
        bias = attention_bias(inputs["padding_mask"])
    layer_outputs = []
    for block in blocks[:-1]:
        x = block(x, bias, **kwargs)
        layer_outputs.append(x)
    x = blocks[-1](x, bias, output_positions=output_positions, **last_kwargs)
    if return_attention:
        x, attention_probs = x
    layer_outputs.append(x)
    if final_norm is not None:
        x = keras.ops.cast(final_norm(x), embeddings.compute_dtype)
    outputs = {"sequence_output": x}
    if pooler is not None:
        outputs["pooled_output"] = pooler(x[:, 0, :])
    if output_encoder_outputs:
        outputs["encoder_outputs"] = layer_outputs
    if return_attention:
        outputs["attention_probs"] = attention_probs
    return outputs


def _rotary_theta(config, index):
    if config.position_embedding != "rotary":
        return None
    return config.rotary_theta if config.is_global_layer(index) else config.local_rotary_theta


@keras.saving.register_keras_serializable(package="keras_bert_core")
class BertEncoder(keras.Model):
    """BERT: embeddings, a stack of transformer blocks and the [CLS] pooler.

    A functional model, so it nests into task models, saves as `.keras` and exports. Its
    `BertConfig` also makes RoBERTa (position offset, one token type), ALBERT (factorized
    embeddings, blocks sharing weights in `num_layer_groups` groups), DistilBERT (no
    token types, no pooler), ModernBERT (rotary positions, GeGLU, no biases, pre-LN,
    sliding-window attention between global layers) and DeBERTa-v3 (disentangled attention
    over relative positions, `layers.DisentangledSelfAttention`): see
    `BertConfig.preset("albert_base")`, `BertConfig.preset("deberta_v3_base")` and the
    others.

    Args:
        config: a `BertConfig` (or its dict form).
        output_encoder_outputs: also return every block's output as `encoder_outputs`.
        one_hot_embeddings: look words up by one-hot matmul (see `BertEmbeddings`).
        remat: recompute each block's activations in the backward pass instead of keeping
            them (gradient checkpointing): less memory for some extra compute.
        dtype: dtype policy for the whole network, e.g. `"mixed_bfloat16"`; `None` takes the
            global policy.
        embeddings: a layer to embed with instead of its own `BertEmbeddings` (ELECTRA's
            generator reads its discriminator's tables through a `SharedEmbeddings`). Not
            saved in its config: the model holding both encoders rebuilds the link.

    Inputs: a dict of int32 `[batch, seq]` tensors `token_ids`, `segment_ids` and
    `padding_mask` (1 at real tokens, 0 at padding). Several documents packed into one row
    carry document ids 1, 2, 3... in `padding_mask`: attention stays within each document
    and positions restart at each, so a packed row computes what separate rows would.

    Outputs: a dict with `sequence_output` `[batch, seq, hidden]`, `pooled_output`
    `[batch, hidden]` (unless `config.pooler` is False) and, on request, `encoder_outputs`
    (a list, one per block).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> ids = np.array([[2, 10, 11, 3, 0]], "int32")
    >>> out = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...                "padding_mask": (ids > 0).astype("int32")})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((1, 5, 128), (1, 128))
    """

    def __init__(self, config, output_encoder_outputs=False, one_hot_embeddings=False,
                 remat=False, dtype=None, embeddings=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        inputs = encoder_inputs()
        embeddings = embeddings if embeddings is not None else BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            embedding_size=config.embedding_size,
            position_embedding=config.position_embedding,
            dropout=config.dropout,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range,
            one_hot_lookup=one_hot_embeddings,
            position_offset=config.position_offset,
            use_bias=config.use_bias,
            dtype=dtype,
            name="embeddings",
        )
        relative, relative_embeddings = {}, None
        if config.position_embedding == "relative":
            relative = {"relative_buckets": config.position_buckets,
                        "max_relative_positions": config.max_relative_positions}
            relative_embeddings = RelativeEmbeddings(
                config.position_buckets, config.hidden_size,
                layer_norm_eps=config.layer_norm_eps,
                initializer_range=config.initializer_range, dtype=dtype,
                name="relative_embeddings")
        groups = [
            TransformerEncoderBlock(
                num_heads=config.num_heads,
                intermediate_size=config.intermediate_size,
                activation=config.hidden_act,
                dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_eps=config.layer_norm_eps,
                norm_first=config.norm_first,
                initializer_range=config.initializer_range,
                remat=remat,
                use_bias=config.use_bias,
                gated_feed_forward=config.gated_feed_forward,
                attention_norm=index > 0 or config.first_block_attention_norm,
                rotary_theta=_rotary_theta(config, index),
                window=None if config.is_global_layer(index) else config.local_attention_window,
                **relative,
                dtype=dtype,
                name=f"block_{index}",
            )
            for index in range(config.num_layer_groups or config.num_layers)
        ]
        # ALBERT: consecutive layers share one group's weights.
        blocks = [groups[index * len(groups) // config.num_layers]
                  for index in range(config.num_layers)]
        # Pre-LN stacks end un-normalized; one last LayerNorm makes outputs comparable.
        final_norm = LayerNorm(
            epsilon=config.layer_norm_eps, center=config.use_bias, dtype="float32",
            name="final_norm") if config.norm_first else None
        pooler = keras.layers.Dense(
            config.hidden_size, activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range),
            dtype=dtype, name="pooler") if config.pooler else None
        outputs = _encode(config, inputs, embeddings, blocks, final_norm, pooler,
                          output_encoder_outputs=output_encoder_outputs,
                          relative_embeddings=relative_embeddings)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        if dtype is not None:
            # Functional models drop `dtype`; task models read the policy from the encoder
            # (under mixed_float16 their compile adds loss scaling).
            self.dtype_policy = keras.dtype_policies.get(dtype)

        self.config = config
        self.output_encoder_outputs = output_encoder_outputs
        self.one_hot_embeddings = one_hot_embeddings
        self.remat = remat
        self.embeddings = embeddings
        self.blocks = blocks  # one per layer; with layer groups, shared blocks repeat
        self.layer_groups = groups
        self.final_norm = final_norm
        self.pooler = pooler
        self.relative_embeddings = relative_embeddings  # DeBERTa's, else None

    def call(self, inputs, training=None, mask=None):
        # Select by name: Keras matches a dict with extra keys (say, a pretraining batch that
        # also holds masked_positions) to the inputs by position, and fails deep in attention.
        # (Keras itself names a missing key.)
        if isinstance(inputs, dict):
            inputs = {name: inputs[name] for name in INPUT_NAMES if name in inputs}
        return super().call(inputs, training=training, mask=mask)

    def encode(self, inputs, output_positions=None, training=None, return_attention=False):
        """The encoder's outputs, with the last block computed only at `output_positions`.

        Task models call this on their symbolic inputs instead of the encoder itself when they
        read only some positions of the last layer: a classifier reads `[CLS]`, the
        pretrainer the masked positions (and `[CLS]`, for its next-sentence head). The last
        block then skips the feed-forward and attention queries of every other position (a
        quarter of a 4-layer encoder's work, a twelfth of a 12-layer one's), and computes the
        same values at the positions kept.

        Args:
            inputs: the encoder's input dict (extra keys are ignored).
            output_positions: int32 `[batch, outputs]`, with 0 (`[CLS]`) first where the
                pooled output is read; `"cls"` for `[CLS]` alone; `None` for every position.
            training: the layers' training flag when called outside a model's `call` (a
                custom train step); `None` takes it from the enclosing call.
            return_attention: also return the last block's attention probabilities as
                `attention_probs`, float32 `[batch, num_heads, outputs, seq]` (for
                attention-transfer distillation). Off by default. On tensors, as a train
                step calls it; not inside a functional graph built over this encoder's
                layers (Keras counts a layer's outputs by its first call).

        Returns the encoder's output dict, where `sequence_output` is `[batch, outputs,
        hidden]` and `pooled_output` comes from the first of `output_positions`.

        Example:
        >>> import numpy as np
        >>> import keras_bert_core as kbc
        >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
        >>> ids = np.array([[2, 10, 11, 3, 0]], "int32")
        >>> out = encoder.encode({"token_ids": ids, "segment_ids": np.zeros_like(ids),
        ...                       "padding_mask": (ids > 0).astype("int32")},
        ...                      return_attention=True)
        >>> tuple(out["attention_probs"].shape)
        (1, 2, 5, 5)
        """
        inputs = {name: inputs[name] for name in INPUT_NAMES}
        if isinstance(output_positions, str) and output_positions == "cls":
            output_positions = keras.ops.zeros_like(inputs["token_ids"][:, :1])
        return _encode(self.config, inputs, self.embeddings, self.blocks, self.final_norm,
                       self.pooler, output_positions, self.output_encoder_outputs,
                       training=training, return_attention=return_attention,
                       relative_embeddings=self.relative_embeddings)

    @property
    def word_embeddings(self):
        """The `[vocab, embedding]` word table (the masked-LM decoder is tied to it)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "output_encoder_outputs": self.output_encoder_outputs,
            "one_hot_embeddings": self.one_hot_embeddings,
            "remat": self.remat,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
