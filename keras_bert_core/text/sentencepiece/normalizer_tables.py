"""What a SentencePiece model's normalizer does with ALBERT-preprocessed text, read from the
model proto (its `precompiled_charsmap` and pieces) into tables for the TFLite offsets."""

import functools
import struct

import numpy as np
from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2

from keras_bert_core.text.character_table import BLOCK_SIZE, NUM_CODE_POINTS
from keras_bert_core.text.sentencepiece.albert_preprocessing import SPACE_CHAR, albert_output_chars

_PIECE = sentencepiece_model_pb2.ModelProto.SentencePiece  # piece types
# What the model's normalizer makes of the text, per output character, as the TFLite route's
# offsets need it: a space (which the normalizer's whitespace rules see) and a character that
# is in no piece of its own (runs of them are one unknown piece).
SPACE_BIT, UNKNOWN_BIT = 1, 2
CODE_POINT_RANGE = NUM_CODE_POINTS  # multiplier that packs a prefix id and a code point


def charsmap_rules(charsmap):
    """The rules of a SentencePiece `precompiled_charsmap`: `{input code points: output}`.

    The blob is a darts-clone double array (a DAWG: subtrees are shared) whose keys are
    UTF-8 byte strings and whose values point into NUL-terminated outputs after it; the
    normalizer replaces the longest key that starts the rest of the text (a character that
    starts none is copied). Walked level by level with numpy.
    """
    if not charsmap:
        return {}
    size = struct.unpack("<I", charsmap[:4])[0]
    units = np.frombuffer(charsmap[4:4 + size], "<u4").astype(np.int64)
    outputs = charsmap[4 + size:]
    base = np.arange(units.size) ^ ((units >> 10) << ((units & 512) >> 6))
    label = units & 0xFF
    # Unit j is the child `label[j]` of every node whose base is j ^ label[j].
    child = np.flatnonzero(((units >> 31) == 0) & (label != 0))
    parent_base = child ^ label[child]
    order = np.argsort(parent_base, kind="stable")
    child, parent_base = child[order], parent_base[order]
    levels = [(np.array([0]), None)]  # (nodes, index of each one's parent one level up)
    while levels[-1][0].size:
        nodes = levels[-1][0]
        first = np.searchsorted(parent_base, base[nodes], "left")
        counts = np.searchsorted(parent_base, base[nodes], "right") - first
        parent = np.repeat(np.arange(nodes.size), counts)
        within = np.arange(parent.size) - np.repeat(np.cumsum(counts) - counts, counts)
        levels.append((child[first[parent] + within], parent))
    rules = {}
    for depth in range(1, len(levels)):
        nodes = levels[depth][0]
        leaves = np.flatnonzero((units[nodes] >> 8) & 1)
        keys = np.zeros((leaves.size, depth), np.uint8)
        at = leaves
        for d in range(depth, 0, -1):
            keys[:, d - 1] = label[levels[d][0][at]]
            at = levels[d][1][at]
        for key, value in zip(keys, (units[base[nodes[leaves]]] & 0x7FFFFFFF).tolist(),
                              strict=True):
            output = outputs[value:outputs.index(b"\0", value)]
            rules[tuple(map(ord, key.tobytes().decode("utf-8")))] = output.decode("utf-8")
    return rules


@functools.lru_cache(maxsize=4)
def normalizer_tables(model, albert_settings, nul_stand_in):
    """What the model's normalizer does with ALBERT-preprocessed text (`albert_settings`:
    its `(lower_case, keep_accents)`) or with raw text (None), as arrays for the TFLite
    route's offsets (see `TfliteOffsets`).

    Returns a dict of numpy arrays: `block_of` and `entries` (per code point, in blocks as
    `albert_character_table`: `spelling + num_spellings * first`, `first` the 1-based
    index of the code point among the first characters of the rules of several
    characters, 0 for none); `spelling_splits` and `spelling_values` (each spelling's
    output characters as `SPACE_BIT | UNKNOWN_BIT` classes; spelling 0 is the empty
    output); `space_spelling` (the output " ") and `space_unknown` (whether `▁` is no
    piece); `levels`, one `(keys, rule_spelling)` pair per rule length from 2 up (sorted
    int64 keys `prefix * NUM_CODE_POINTS + code point`, `prefix` the index of the shorter
    prefix one level down; the spelling of the rule that the key completes, or -1 for a
    prefix only); `piece_lengths` (characters of each piece, 1 for the unknown piece,
    whatever run of unknown characters it stands for).

    Raises:
        ValueError: a model this alignment does not cover (user-defined or byte pieces,
            other whitespace handling than ALBERT's, or a piece holding a character that
            is no piece of its own).
    """
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    kinds = {p.type for p in proto.pieces}
    if kinds & {_PIECE.USER_DEFINED, _PIECE.BYTE} or proto.trainer_spec.byte_fallback:
        raise ValueError("tokenize_with_offsets with tflite_compatible=True does not cover "
                         "SentencePiece models with user-defined or byte-fallback pieces; "
                         "use the default pipeline (tflite_compatible=False)")
    spec = proto.normalizer_spec
    if not (spec.add_dummy_prefix and spec.remove_extra_whitespaces
            and spec.escape_whitespaces) or proto.trainer_spec.treat_whitespace_as_suffix:
        raise ValueError("tokenize_with_offsets with tflite_compatible=True covers "
                         "SentencePiece models with ALBERT's whitespace handling only "
                         "(add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, "
                         "no treat_whitespace_as_suffix); use the default pipeline "
                         "(tflite_compatible=False)")
    singles = {p.piece.replace("\u2581", " ") for p in proto.pieces
               if p.type == _PIECE.NORMAL and len(p.piece) == 1}
    spread = sorted({c for p in proto.pieces if p.type == _PIECE.NORMAL
                     for c in p.piece.replace("\u2581", " ") if c not in singles})
    if spread:
        raise ValueError(f"tokenize_with_offsets with tflite_compatible=True needs every "
                         f"character of a piece to be a piece of its own; this model's "
                         f"pieces hold {spread[:5]} without it")

    def classes(text):
        return tuple((SPACE_BIT if c == " " else 0) | (0 if c in singles else UNKNOWN_BIT)
                     for c in text)

    spellings = {(): 0}

    def spelling_of(text):
        return spellings.setdefault(classes(text), len(spellings))

    rules = charsmap_rules(proto.normalizer_spec.precompiled_charsmap)
    # The characters the fast op can see: NUL is spelled as the stand-in.
    if albert_settings is None:  # raw text: any character

        def possible(key):
            return 0 not in key
    else:
        possible = ((albert_output_chars(*albert_settings) - {0}) | {nul_stand_in}).issuperset
    # A character without a rule of its own is copied: one character of its class.
    own_class = np.full(NUM_CODE_POINTS, UNKNOWN_BIT, np.int64)
    own_class[[ord(c) for c in singles]] = 0
    own_class[SPACE_CHAR] |= SPACE_BIT
    class_spelling = np.zeros(SPACE_BIT + UNKNOWN_BIT + 1, np.int64)
    for own in np.unique(own_class).tolist():
        class_spelling[own] = spellings.setdefault((own,), len(spellings))
    spelling = class_spelling[own_class]
    for key, output in rules.items():
        if len(key) == 1:
            spelling[key[0]] = spelling_of(output)
    longer = sorted(key for key in rules if len(key) > 1 and possible(key))
    firsts = sorted({key[0] for key in longer})
    first = np.zeros(NUM_CODE_POINTS, np.int64)
    first[firsts] = np.arange(1, len(firsts) + 1)
    prefix_ids = {(c,): i for i, c in enumerate(firsts)}
    levels = []
    for length in range(2, max(map(len, longer), default=1) + 1):
        prefixes = sorted({key[:length] for key in longer if len(key) >= length},
                          key=lambda p: (prefix_ids[p[:-1]], p[-1]))
        keys = np.array([prefix_ids[p[:-1]] * CODE_POINT_RANGE + p[-1] for p in prefixes],
                        np.int64)
        rule_spelling = np.array([spelling_of(rules[p]) if p in rules else -1
                                  for p in prefixes], np.int32)
        prefix_ids = {p: i for i, p in enumerate(prefixes)}
        levels.append((keys, rule_spelling))
    entries = spelling + len(spellings) * first
    blocks, block_of = np.unique(entries.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    values = [c for chars in spellings for c in chars]
    unk_id = SentencePieceProcessor(model_proto=model).unk_id()
    piece_lengths = [len(p.piece) if p.type == _PIECE.NORMAL else int(i == unk_id)
                     for i, p in enumerate(proto.pieces)]
    return {
        "block_of": block_of.astype(np.int32).ravel(),
        "entries": blocks.astype(np.int32).ravel(),
        "num_spellings": len(spellings),
        "spelling_splits": np.cumsum([0] + [len(s) for s in spellings]).astype(np.int32),
        "spelling_values": np.array(values or [0], np.int32),
        "space_spelling": spellings[classes(" ")],
        "space_unknown": " " not in singles,
        "levels": levels,
        "piece_lengths": np.array(piece_lengths, np.int32),
    }
