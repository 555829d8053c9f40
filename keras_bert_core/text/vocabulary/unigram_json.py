"""XLM-RoBERTa's `tokenizer.json` (a Unigram model with fairseq's ids) as the SentencePiece
model it was converted from, for folders without `sentencepiece.bpe.model` (as transformers
5 saves them)."""

import base64

from sentencepiece import sentencepiece_model_pb2

from keras_bert_core.text.vocabulary.kinds import FAIRSEQ_SENTENCEPIECE, VocabularySource

_FAIRSEQ_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
_METASPACE = "\u2581"
# Steps that transformers' converters put around the model's normalizer, which the
# SentencePiece model does itself (whitespace runs collapsed, none at the end).
_WHITESPACE_STEPS = ({"type": "Strip", "strip_left": False, "strip_right": True},
                     {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": _METASPACE},
                     {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})


def read_xlm_roberta_json(path, spec, model):
    """The `VocabularySource` (a serialized SentencePiece model, `read_from=path`) of a
    Unigram `tokenizer.json` laid out as XLM-RoBERTa's: `<s>`, `<pad>`, `</s>`, `<unk>`,
    the model's pieces with their scores, `<mask>` last; a `Precompiled` normalizer (the
    model's character map) and a `Metaspace` pre-tokenizer that prepends `▁`.

    Raises:
        ValueError: any other layout or setting, named with the file.

    Example:
    >>> vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["▁a", -1.0],
    ...          ["<mask>", 0.0]]
    >>> spec = {"normalizer": None,
    ...         "pre_tokenizer": {"type": "Metaspace", "replacement": "▁",
    ...                           "prepend_scheme": "always", "split": True},
    ...         "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab}}
    >>> source = read_xlm_roberta_json("tokenizer.json", spec, spec["model"])
    >>> source.kind, len(source.vocabulary) > 0
    ('fairseq_sentencepiece', True)
    """
    vocab = model.get("vocab")
    if not isinstance(vocab, list):
        raise ValueError(f"{path}: model.vocab of a Unigram model is not a list of "
                         "[piece, score]")
    tokens = [entry[0] if isinstance(entry, list) and entry else None for entry in vocab]
    if (tokens[:4] != _FAIRSEQ_SPECIALS or tokens[-1:] != ["<mask>"]
            or model.get("unk_id") != 3):
        raise ValueError(f"{path}: a Unigram model that is not laid out as XLM-RoBERTa's "
                         "(<s> <pad> </s> <unk> first, unk_id 3, <mask> last): keras_bert_core "
                         "builds other SentencePiece models from their .model file; put that "
                         "file in the folder")
    if model.get("byte_fallback"):
        raise ValueError(f"{path}: model.byte_fallback is true; keras_bert_core's "
                         "XlmRobertaTokenizer reproduces false only")
    proto = sentencepiece_model_pb2.ModelProto()
    for piece, kind in (("<unk>", "UNKNOWN"), ("<s>", "CONTROL"), ("</s>", "CONTROL")):
        proto.pieces.add(piece=piece, score=0.0, type=kind)
    for entry in vocab[4:-1]:
        if len(entry) != 2 or not isinstance(entry[0], str) or not isinstance(
                entry[1], (int, float)):
            raise ValueError(f"{path}: model.vocab entry {entry!r} is not [piece, score]")
        proto.pieces.add(piece=entry[0], score=float(entry[1]))
    trainer = proto.trainer_spec
    trainer.model_type = sentencepiece_model_pb2.TrainerSpec.UNIGRAM
    trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id = 0, 1, 2, -1
    normalizer = proto.normalizer_spec
    normalizer.name = "precompiled"
    normalizer.precompiled_charsmap = _charsmap(path, spec.get("normalizer"))
    normalizer.add_dummy_prefix = normalizer.remove_extra_whitespaces = True
    normalizer.escape_whitespaces = True
    _check_pre_tokenizer(path, spec.get("pre_tokenizer"))
    return VocabularySource(FAIRSEQ_SENTENCEPIECE, proto.SerializeToString(), read_from=path)


def _charsmap(path, normalizer):
    """The `Precompiled` step's character map (b"" for none), the other steps checked."""
    steps = (normalizer.get("normalizers", []) if normalizer and normalizer.get("type")
             == "Sequence" else [normalizer] if normalizer else [])
    charsmap = b""
    for step in steps:
        if step.get("type") == "Precompiled":
            charsmap = base64.b64decode(step.get("precompiled_charsmap") or "")
        elif step not in _WHITESPACE_STEPS:
            raise ValueError(f"{path}: normalizer step {step!r} with an XLM-RoBERTa Unigram "
                             "model: keras_bert_core reproduces its Precompiled map only")
    return charsmap


def _check_pre_tokenizer(path, pre_tokenizer):
    steps = (pre_tokenizer.get("pretokenizers", []) if pre_tokenizer
             and pre_tokenizer.get("type") == "Sequence" else [pre_tokenizer or {}])
    metaspace = [s for s in steps if s.get("type") == "Metaspace"]
    others = [s for s in steps if s.get("type") not in ("Metaspace", "WhitespaceSplit")]
    if (len(metaspace) != 1 or others or metaspace[0].get("replacement") != _METASPACE
            or metaspace[0].get("prepend_scheme", "always" if metaspace[0].get(
                "add_prefix_space", True) else "never") != "always"):
        raise ValueError(f"{path}: pre_tokenizer {pre_tokenizer!r} with an XLM-RoBERTa "
                         "Unigram model: keras_bert_core reproduces a Metaspace ('▁', "
                         "prepended always) only")
