"""A real English corpus that every Python installation has: the standard library's docstrings.

`kbc demo` pretrains on it and fine-tunes on a topic task derived from it, with no download.
Docstrings are read with `ast` from the source files, never by importing modules (importing
some stdlib modules has side effects: `antigravity` opens a browser, `this` prints).
"""

import ast
import dataclasses
import hashlib
import pathlib
import re
import sysconfig

# Topic task: which area of the standard library a docstring documents.
TOPICS = {
    "text": ("string", "re", "textwrap", "difflib", "unicodedata", "codecs", "html", "gettext",
             "locale", "csv", "json", "xml", "configparser", "pprint", "shlex"),
    "network": ("http", "urllib", "email", "socket", "ssl", "smtplib", "ftplib", "imaplib",
                "poplib", "xmlrpc", "socketserver", "mailbox", "mimetypes", "ipaddress"),
    "files": ("os", "pathlib", "shutil", "zipfile", "tarfile", "glob", "tempfile", "filecmp",
              "fileinput", "gzip", "bz2", "lzma", "io", "ntpath", "posixpath", "stat", "fnmatch"),
    "numbers": ("decimal", "_pydecimal", "fractions", "statistics", "random", "numbers",
                "datetime", "_pydatetime", "calendar", "_strptime", "colorsys"),
    "concurrency": ("threading", "multiprocessing", "asyncio", "concurrent", "queue",
                    "subprocess", "sched", "signal", "selectors"),
}
_SKIPPED_PARTS = {"test", "tests", "idlelib", "site-packages", "lib2to3", "turtledemo",
                  "__pycache__", "ensurepip", "venv"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")


@dataclasses.dataclass(frozen=True)
class Docstring:
    module: str  # dotted module name, e.g. "email.message"
    text: str


def stdlib_root() -> pathlib.Path:
    return pathlib.Path(sysconfig.get_paths()["stdlib"])


def read_docstrings(root=None, min_chars=40):
    """Every module, class and function docstring of the standard library, in a stable order.

    Example (one package of it; without `root`, the whole library):
    >>> docs = read_docstrings(stdlib_root() / "json")
    >>> len(docs) > 10 and all(len(d.text) >= 40 for d in docs)
    True
    """
    root = pathlib.Path(root) if root else stdlib_root()
    docstrings = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _SKIPPED_PARTS.intersection(relative.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue  # a few stdlib files are templates or Python-2 fixtures
        module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node)
                if text and len(text) >= min_chars:
                    docstrings.append(Docstring(module, text))
    return docstrings


def sentences(text):
    """Prose sentences of a docstring: doctest and indented code lines dropped."""
    prose_lines = [line for line in text.splitlines()
                   if not line.startswith((" ", "\t", ">>>", "..."))]
    paragraphs = re.split(r"\n\s*\n", "\n".join(prose_lines))
    found = []
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        found.extend(s for s in _SENTENCE_END.split(paragraph) if len(s.split()) >= 3)
    return found


def write_pretraining_corpus(docstrings, path):
    """google-research format: one sentence per line, a blank line between documents."""
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for doc in docstrings:
            lines = sentences(doc.text)
            if lines:
                f.write("\n".join(lines) + "\n\n")
                count += 1
    return count


def topic_of(module):
    top = module.split(".")[0]
    for topic, modules in TOPICS.items():
        if top in modules:
            return topic
    return None


def topic_examples(docstrings, max_words=64):
    """`(train, held_out)` lists of `(text, topic)`; a module's docstrings all land on one side.

    The split hashes the module name, so no module's vocabulary leaks from train to held-out;
    texts repeated across modules (ntpath and posixpath share many) are kept once.
    """
    train, held_out, seen = [], [], set()
    for doc in docstrings:
        topic = topic_of(doc.module)
        text = " ".join(" ".join(sentences(doc.text)).split()[:max_words])
        if topic is None or not text or text in seen:
            continue
        seen.add(text)
        bucket = int(hashlib.sha1(doc.module.encode()).hexdigest(), 16) % 5
        (held_out if bucket == 0 else train).append((text, topic))
    return train, held_out
