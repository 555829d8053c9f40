"""The special-token ids every tokenizer of the package answers, from its own token names."""


class SpecialTokenIds:
    """`cls_id`, `sep_id`, `pad_id`, `mask_id` and `unk_id` of a tokenizer.

    A tokenizer names its tokens for the five roles in `SPECIAL_TOKENS` (BERT's `[CLS]`,
    RoBERTa's `<s>`...), or in `special_tokens` where its vocabulary decides them, and looks
    them up with its `token_to_id`.

    Example:
    >>> class Tokens(SpecialTokenIds):
    ...     SPECIAL_TOKENS = {"cls": "<s>", "sep": "</s>", "pad": "<pad>", "mask": "<mask>",
    ...                       "unk": "<unk>"}
    ...     def token_to_id(self, token):
    ...         return ["<s>", "<pad>", "</s>", "<unk>", "<mask>"].index(token)
    >>> Tokens().sep_id, Tokens().mask_id
    (2, 4)
    """

    SPECIAL_TOKENS = {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "mask": "[MASK]",
                      "unk": "[UNK]"}

    @property
    def special_tokens(self):
        """Role (`cls`, `sep`, `pad`, `mask`, `unk`) -> the tokenizer's token."""
        return self.SPECIAL_TOKENS

    @property
    def cls_id(self):
        """Id of the token that starts a sequence."""
        return self.token_to_id(self.special_tokens["cls"])

    @property
    def sep_id(self):
        """Id of the token that ends a segment."""
        return self.token_to_id(self.special_tokens["sep"])

    @property
    def pad_id(self):
        return self.token_to_id(self.special_tokens["pad"])

    @property
    def mask_id(self):
        return self.token_to_id(self.special_tokens["mask"])

    @property
    def unk_id(self):
        return self.token_to_id(self.special_tokens["unk"])
