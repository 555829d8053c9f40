"""A real retrieval task from text on this machine: find the docstring a one-line summary opens.

    python bench/retrieval_task.py [--out runs/embedding_retrieval] [--train-pairs 3200]
                                   [--test-queries 500] [--packages numpy,pandas,...]

Every class, function and method docstring of the Python standard library and of the
installed `--packages` (read with `ast` from the source files, never imported) that has a
summary paragraph and a body gives one pair:

- query: the summary (the docstring's first paragraph, 4 to 40 words), e.g. "Return the
  cumulative sum of the elements along a given axis.";
- document: the rest of the docstring (the summary stripped; doctest lines and
  reStructuredText/numpydoc underlines dropped; whitespace collapsed), 20 words or more,
  cut to its first 200 words.

Kept only when the summary is not a verbatim substring of its document (case and spacing
ignored) and has no template markers (`%(`, `{`); a query or a document that occurs twice
is dropped altogether (two functions sharing a summary make the answer ambiguous).

Split by module, deterministically (sha1 of the dotted module name): a quarter of the modules
are test modules. Test: every test-module document is in the corpus, and `--test-queries`
of their summaries (every k-th, in a stable order) are the queries, each with exactly one
relevant document. Train: `--train-pairs` pairs from the other modules (every k-th), so the
fine-tuned models never saw a test module's text.

Writes into `--out` (under runs/, which git ignores): train.jsonl ({"query", "document"}),
queries.jsonl ({"id", "text", "doc_id"}), corpus.jsonl ({"id", "text", "module"}), and
task.json (sources, versions, counts, sha256 of each file); task.json is also copied to
bench/results/embedding_retrieval_task.json.
"""

import argparse
import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import re
import sys
import sysconfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

DEFAULT_OUT = os.path.join(common.REPO, "runs", "embedding_retrieval")
DEFAULT_PACKAGES = "numpy,pandas,matplotlib,scipy,sklearn"
_SKIPPED_PARTS = {"test", "tests", "testing", "idlelib", "site-packages", "lib2to3",
                  "turtledemo", "__pycache__", "ensurepip", "venv", "_vendor", "vendored"}
_UNDERLINE = re.compile(r"^\s*[-=~^*]{3,}\s*$")
DOCUMENT_WORDS = 200


def sources(packages):
    """(name, root folder) of the standard library and each installed package."""
    roots = [("stdlib", pathlib.Path(sysconfig.get_paths()["stdlib"]))]
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"package {name!r} is not installed in {sys.executable}")
        roots.append((name, pathlib.Path(list(spec.submodule_search_locations)[0])))
    return roots


def version_of(name):
    if name == "stdlib":
        return sys.version.split()[0]
    distribution = {"sklearn": "scikit-learn", "PIL": "pillow"}.get(name, name)
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def normalized(text):
    return " ".join(text.lower().split())


def pair_of(docstring):
    """(summary, document) of a docstring, or None when it has no usable body."""
    parts = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)
    if len(parts) < 2:
        return None
    summary = " ".join(parts[0].split())
    lines = [line for line in parts[1].splitlines()
             if not _UNDERLINE.match(line) and not line.lstrip().startswith((">>>", "..."))]
    words = " ".join(lines).split()
    if not 4 <= len(summary.split()) <= 40 or len(words) < 20:
        return None
    if "%(" in summary or "{" in summary:
        return None
    document = " ".join(words[:DOCUMENT_WORDS])
    if normalized(summary) in normalized(document):
        return None
    return summary, document


def read_pairs(roots):
    """Every (module, summary, document), in a stable order."""
    pairs = []
    for name, root in roots:
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if _SKIPPED_PARTS.intersection(relative.parts):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            parts = relative.with_suffix("").parts
            module = ".".join(parts if name == "stdlib" else (name, *parts))
            module = module.removesuffix(".__init__")
            for node in ast.walk(tree):
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    docstring = ast.get_docstring(node)
                    pair = pair_of(docstring) if docstring else None
                    if pair:
                        pairs.append((module, *pair))
    return pairs


def unique(pairs):
    """Pairs whose query and document each occur once (case and spacing ignored)."""
    queries, documents = {}, {}
    for _, summary, document in pairs:
        queries[normalized(summary)] = queries.get(normalized(summary), 0) + 1
        documents[normalized(document)] = documents.get(normalized(document), 0) + 1
    return [p for p in pairs
            if queries[normalized(p[1])] == 1 and documents[normalized(p[2])] == 1]


def is_test_module(module):
    return hashlib.sha1(module.encode()).digest()[0] % 4 == 0


def every_kth(items, count):
    return items[:: max(1, len(items) // count)][:count]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--packages", default=DEFAULT_PACKAGES)
    parser.add_argument("--train-pairs", type=int, default=3200)
    parser.add_argument("--test-queries", type=int, default=500)
    args = parser.parse_args()

    roots = sources([p for p in args.packages.split(",") if p])
    found = read_pairs(roots)
    pairs = unique(found)
    test = [p for p in pairs if is_test_module(p[0])]
    train = every_kth([p for p in pairs if not is_test_module(p[0])], args.train_pairs)
    queried = set(range(len(test))[:: max(1, len(test) // args.test_queries)][
        :args.test_queries])

    os.makedirs(args.out, exist_ok=True)
    corpus = [{"id": f"d{i}", "text": doc, "module": module}
              for i, (module, _, doc) in enumerate(test)]
    queries = [{"id": f"q{i}", "text": summary, "doc_id": f"d{i}"}
               for i, (_, summary, _) in enumerate(test) if i in queried]
    hashes = {
        "train.jsonl": write_jsonl(os.path.join(args.out, "train.jsonl"),
                                   [{"query": q, "document": d} for _, q, d in train]),
        "queries.jsonl": write_jsonl(os.path.join(args.out, "queries.jsonl"), queries),
        "corpus.jsonl": write_jsonl(os.path.join(args.out, "corpus.jsonl"), corpus),
    }
    task = {
        "sources": {name: version_of(name) for name, _ in roots},
        "python": sys.executable,
        "pairs_found": len(found), "pairs_unique": len(pairs),
        "train_pairs": len(train), "test_queries": len(queries), "corpus_documents": len(corpus),
        "train_modules": len({p[0] for p in train}),
        "test_modules": len({p[0] for p in test}),
        "mean_query_words": round(sum(len(q["text"].split()) for q in queries)
                                  / len(queries), 1),
        "mean_document_words": round(sum(len(d["text"].split()) for d in corpus)
                                     / len(corpus), 1),
        "sha256": hashes, "out": os.path.abspath(args.out),
    }
    with open(os.path.join(args.out, "task.json"), "w") as f:
        f.write(json.dumps(task, indent=2) + "\n")
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    with open(os.path.join(common.RESULTS_DIR, "embedding_retrieval_task.json"), "w") as f:
        f.write(json.dumps(task, indent=2) + "\n")
    print(json.dumps(task, indent=2))


if __name__ == "__main__":
    main()
