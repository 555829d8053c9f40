"""What the reference BERT tokenizer makes of one character: removed, whitespace, an
isolated one-character word (punctuation, CJK ideograph) or a word character, and, uncased,
its NFD form without accents in lower case. Both tokenizer pipelines normalize with it: the
default one in the graph, the TFLite-compatible one through `character_table`, built from it.
"""

import tensorflow as tf
import tensorflow_text as tf_text

# What the reference makes of a character (`normalize_characters` gives one per character).
REMOVED_CHAR, WHITESPACE_CHAR, ISOLATED_CHAR, WORD_CHAR = 0, 1, 2, 3
# Longer words become a single [UNK], as in the reference tokenizer.
MAX_CHARS_PER_WORD = 100

# Character classes, matched by RE2 against one normalized character. The reference
# tokenizer's Unicode category tables are older than those of RE2 in TensorFlow: characters
# assigned since as format (Cf), non-spacing marks (Mn) or punctuation (P) are plain word
# characters to the reference, so the classes leave them out (found by comparing every code
# point with the reference; tests/text/wordpiece/test_bert_tokenizer.py keeps that comparison).
_NEWER_CF = r"\x{890}-\x{891}\x{8e2}\x{110cd}\x{13430}-\x{1343f}"
_NEWER_MN = (
    r"\x{7fd}\x{898}-\x{89f}\x{8ca}-\x{8e1}\x{9fe}\x{afa}-\x{aff}\x{b55}\x{c04}\x{c3c}\x{d00}"
    r"\x{d3b}-\x{d3c}\x{d81}\x{eba}\x{ece}\x{180f}\x{1885}-\x{1886}\x{1abf}-\x{1ace}"
    r"\x{1df6}-\x{1dfb}\x{a82c}\x{a8c5}\x{a8ff}\x{a9bd}\x{10d24}-\x{10d27}\x{10eab}-\x{10eac}"
    r"\x{10efd}-\x{10eff}\x{10f46}-\x{10f50}\x{10f82}-\x{10f85}\x{11070}\x{11073}-\x{11074}"
    r"\x{110c2}\x{111c9}\x{111cf}\x{1123e}\x{11241}\x{1133b}\x{11438}-\x{1143f}"
    r"\x{11442}-\x{11444}\x{11446}\x{1145e}\x{1182f}-\x{11837}\x{11839}-\x{1183a}"
    r"\x{1193b}-\x{1193c}\x{1193e}\x{11943}\x{119d4}-\x{119d7}\x{119da}-\x{119db}\x{119e0}"
    r"\x{11a01}-\x{11a0a}\x{11a33}-\x{11a38}\x{11a3b}-\x{11a3e}\x{11a47}\x{11a51}-\x{11a56}"
    r"\x{11a59}-\x{11a5b}\x{11a8a}-\x{11a96}\x{11a98}-\x{11a99}\x{11c30}-\x{11c36}"
    r"\x{11c38}-\x{11c3d}\x{11c3f}\x{11c92}-\x{11ca7}\x{11caa}-\x{11cb0}\x{11cb2}-\x{11cb3}"
    r"\x{11cb5}-\x{11cb6}\x{11d31}-\x{11d36}\x{11d3a}\x{11d3c}-\x{11d3d}\x{11d3f}-\x{11d45}"
    r"\x{11d47}\x{11d90}-\x{11d91}\x{11d95}\x{11d97}\x{11ef3}-\x{11ef4}\x{11f00}-\x{11f01}"
    r"\x{11f36}-\x{11f3a}\x{11f40}\x{11f42}\x{13440}\x{13447}-\x{13455}\x{16f4f}\x{16fe4}"
    r"\x{1cf00}-\x{1cf2d}\x{1cf30}-\x{1cf46}\x{1e000}-\x{1e006}\x{1e008}-\x{1e018}"
    r"\x{1e01b}-\x{1e021}\x{1e023}-\x{1e024}\x{1e026}-\x{1e02a}\x{1e08f}\x{1e130}-\x{1e136}"
    r"\x{1e2ae}\x{1e2ec}-\x{1e2ef}\x{1e4ec}-\x{1e4ef}\x{1e944}-\x{1e94a}"
)
_NEWER_P = (
    r"\x{61d}\x{9fd}\x{a76}\x{c77}\x{c84}\x{1b7d}-\x{1b7e}\x{2e43}-\x{2e4f}\x{2e52}-\x{2e5d}"
    r"\x{10ead}\x{10f55}-\x{10f59}\x{10f86}-\x{10f89}\x{1144b}-\x{1144f}\x{1145a}-\x{1145b}"
    r"\x{1145d}\x{11660}-\x{1166c}\x{116b9}\x{1183b}\x{11944}-\x{11946}\x{119e2}"
    r"\x{11a3f}-\x{11a46}\x{11a9a}-\x{11a9c}\x{11a9e}-\x{11aa2}\x{11b00}-\x{11b09}"
    r"\x{11c41}-\x{11c45}\x{11c70}-\x{11c71}\x{11ef7}-\x{11ef8}\x{11f43}-\x{11f4f}\x{11fff}"
    r"\x{12ff1}-\x{12ff2}\x{16e97}-\x{16e9a}\x{16fe2}\x{1e95e}-\x{1e95f}"
)
# [^\P{X}...] is "category X except ...".
_REMOVED = rf"\x00|\x{{fffd}}|[^\P{{Cc}}\t\n\r]|[^\P{{Cf}}{_NEWER_CF}]|\p{{Co}}"
# U+1734 was Mn in the reference's tables (Mc today).
_ACCENT = rf"[^\P{{Mn}}{_NEWER_MN}]|\x{{1734}}"
_WHITESPACE = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]"
_ISOLATED = (
    # ASCII symbols count as punctuation; U+166D and U+111C9 were punctuation in the
    # reference's tables.
    rf"[!-/:-@\[-`{{-~\x{{166d}}\x{{111c9}}]|[^\P{{P}}{_NEWER_P}]"
    # CJK ideographs, with the reference's bounds (its extension-E range starts at 2B920).
    r"|[\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}\x{2a700}-\x{2b73f}"
    r"\x{2b740}-\x{2b81f}\x{2b920}-\x{2ceaf}\x{f900}-\x{faff}\x{2f800}-\x{2fa1f}]"
)


def normalize_characters(chars, lower_case):
    """Normalizes single characters (a string tensor) as the reference does: clean, and
    uncased, strip accents and lower case; returns them with their class (`REMOVED_CHAR`,
    `WHITESPACE_CHAR`, `ISOLATED_CHAR` or `WORD_CHAR`)."""
    chars = tf.strings.regex_replace(chars, _REMOVED, "")
    if lower_case:
        chars = tf_text.normalize_utf8(chars, "NFD")
        chars = tf.strings.regex_replace(chars, _ACCENT, "")
        chars = tf.strings.lower(chars, encoding="utf-8")
    kind = tf.where(tf.strings.regex_full_match(chars, _ISOLATED), ISOLATED_CHAR, WORD_CHAR)
    kind = tf.where(tf.strings.regex_full_match(chars, _WHITESPACE), WHITESPACE_CHAR, kind)
    return chars, tf.where(tf.strings.length(chars) == 0, REMOVED_CHAR, kind)


def too_long_words(words):
    """Words the reference replaces with [UNK]: over 100 characters after normalization."""
    return tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
