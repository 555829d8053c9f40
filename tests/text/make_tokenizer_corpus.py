"""Writes tests/text/data/tokenizer_corpus.jsonl, the corpus for tokenizer parity and speed.

One JSON string per line: Python standard-library docstring lines (real English prose, code
and symbols) followed by generated lines that stress Unicode handling: accents (precomposed
and combining), Greek final sigma, Turkish dotted I, CJK, kana and Hangul, emoji (skin tones,
ZWJ sequences, flags), symbols that compatibility normalization would fold (² ™ ﬁ ½),
full-width forms, control, format and zero-width characters, unusual whitespace, private-use
and unassigned code points, very long words, and mixed scripts.

Run it again only to change the corpus: `python tests/text/make_tokenizer_corpus.py`.
"""

import importlib
import inspect
import json
import pathlib
import random

OUTPUT = pathlib.Path(__file__).with_name("data") / "tokenizer_corpus.jsonl"
STDLIB_MODULES = (
    "argparse", "ast", "asyncio", "collections", "csv", "datetime", "decimal", "email",
    "fractions", "functools", "http.client", "inspect", "itertools", "json", "logging",
    "os", "pathlib", "pickle", "re", "shutil", "sqlite3", "statistics", "string",
    "subprocess", "tarfile", "textwrap", "threading", "typing", "unittest", "urllib.parse",
    "zipfile",
)  # fmt: skip
NUM_STDLIB_LINES = 3500
NUM_GENERATED_LINES = 2000

ACCENTED = "àáâãäåāăąçćčďèéêëēėęěğìíîïīįıłñńňòóôõöøōőœřśšşţťùúûüūůűųýÿźżžßÀÉÎÕÜÇŠŽÅØ"
COMBINING = "\u0300\u0301\u0302\u0303\u0308\u030a\u0327\u0328\u0331"
SCRIPTS = {
    "greek": "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρσςτυφχψωάέήίόύώΐΰ",
    "cyrillic": "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмнопрстуфхцчшщъыьэюяіїєґ",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي" + "\u064b\u064e\u064f\u0650\u0651\u0652",
    "hebrew": "אבגדהוזחטיכלמנסעפצקרשת" + "\u05b0\u05b4\u05b7\u05bc",
    "devanagari": "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह" + "\u093e\u093f\u0940\u094d\u093c",
    "thai": "กขคงจฉชซญดตถทนบปผพฟภมยรลวศษสหอฮะาิีุูเแโใไ่้",
    "hangul": "가각간갈감갑강개거건걸검게겨결경고공과관광교구국군권귀그근글기길김",
    "kana": (
        "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらり"
        "るれろわをんアイウエオカキクケコサシスセソ"
    ),
    "cjk": (
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着"
        "去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主"
        "行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二"
        "理美点月明"
    ),
    "armenian_georgian": "ԱԲԳԴԵաբգդեზსხჯჰაბგდე",
    "math_alnum": "𝐀𝐁𝐂𝑎𝑏𝑐𝔸𝔹ℂ𝟙𝟚𝟛",
}
SYMBOLS = "²³¹™©®°±×÷€£¥¢§¶•…‰′″ﬁﬂﬀ½¼¾⅓⅔→⇒←↔∑∏∞≈≠≤≥√∫∂∆∇µΩℓ№℃℉ªº¿¡«»‹›„“”‘’–—‐"
FULL_WIDTH = "ＡＢＣＤＥＦＧａｂｃｄｅｆｇ０１２３４５６７８９！？（）［］，．：；／＠＃％＆＊＋＝"
EMOJI = [
    "😀", "😂", "🥰", "🤖", "👍", "👍🏽", "👩🏿‍💻", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "☕", "✅",
    "🎉", "🧪", "🫠", "1️⃣", "🏳️‍🌈",
]  # fmt: skip
CONTROL_AND_FORMAT = (
    "\x00\x01\x07\x08\x0b\x0c\x1b\x1c\x1f\x7f\x85\x9f\u00ad\u200b\u200c\u200d\u200e\u200f"
    "\u2060\u2066\u2069\ufeff\ufffd\ufff9\U000e0001\U000e0041"
)
WHITESPACE = "\t\r \u00a0\u1680\u2000\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
ODD_CODE_POINTS = "\ue000\uf8ff\U000f0000\U0010fffd\u0378\U0001fbf9\ufdd0\uffff\U0002fffe"


def stdlib_lines():
    lines = {}
    for module_name in STDLIB_MODULES:
        module = importlib.import_module(module_name)
        for _, member in inspect.getmembers(module):
            for line in (inspect.getdoc(member) or "").splitlines():
                if line.strip():
                    lines[line] = None
    return list(lines)[:NUM_STDLIB_LINES]


def generated_lines(rng, words):
    def word():
        return rng.choice(words)

    def accented_word():
        w = list(word())
        for i in rng.sample(range(len(w)), k=max(1, len(w) // 3)):
            w[i] = rng.choice(ACCENTED) if rng.random() < 0.6 else w[i] + rng.choice(COMBINING)
        return "".join(w)

    def script_word(script=None):
        letters = SCRIPTS[script or rng.choice(list(SCRIPTS))]
        return "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))

    def sprinkle(pool):
        w = word()
        i = rng.randint(0, len(w))
        return w[:i] + "".join(rng.choice(pool) for _ in range(rng.randint(1, 3))) + w[i:]

    def long_word():
        n = rng.choice([99, 100, 101, 102, 150])
        pool = rng.choice(["abcdefghij", "абвгдежзий", "éèêëàâ", "0123456789", "ﬁ²™"])
        return "".join(rng.choice(pool) for _ in range(n))

    def greek_sentence():
        return " ".join(rng.choice(["ΟΔΟΣ", "ΣΑΣ", "Σίσυφος", "ΚΌΣΜΟΣ", "σας", "ςσΣ"]) + "."
                        for _ in range(rng.randint(1, 4)))

    pieces = [
        accented_word,
        script_word,
        lambda: script_word("cjk") + "，" + script_word("cjk") + "。",
        lambda: rng.choice(EMOJI) * rng.randint(1, 3),
        lambda: sprinkle(SYMBOLS),
        lambda: sprinkle(FULL_WIDTH),
        lambda: sprinkle(CONTROL_AND_FORMAT),
        lambda: rng.choice(WHITESPACE),
        lambda: sprinkle(ODD_CODE_POINTS),
        lambda: rng.choice(["İstanbul", "ıi İI", "Straße STRASSE ẞ", "ǅemal ǈ", "ĳsland Ĳ"]),
        greek_sentence,
        long_word,
        lambda: chr(rng.choice([rng.randint(0x20, 0xD7FF), rng.randint(0xE000, 0x10FFFF)])),
    ]
    lines = []
    for _ in range(NUM_GENERATED_LINES):
        parts = [word() if rng.random() < 0.4 else rng.choice(pieces)()
                 for _ in range(rng.randint(1, 10))]
        lines.append(" ".join(parts))
    return lines


def build_corpus(seed=0):
    rng = random.Random(seed)
    prose = stdlib_lines()
    words = sorted({w for line in prose for w in line.split() if w.isalpha()})
    return prose + generated_lines(rng, words)


if __name__ == "__main__":
    corpus = build_corpus()
    OUTPUT.parent.mkdir(exist_ok=True)
    with open(OUTPUT, "w", encoding="utf-8") as f:
        for line in corpus:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(corpus)} lines, {OUTPUT.stat().st_size} bytes to {OUTPUT}")
