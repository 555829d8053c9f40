"""SQuAD, the data format of extractive question answering: examples and files.

`load_squad` reads SQuAD v1.1 / v2.0 JSON into `SquadExample`s (`keras_bert_core.tasks.tfds`
reads it from TensorFlow Datasets); `scores` holds SQuAD's official scoring.
"""

from __future__ import annotations

import dataclasses
import json
import os

from keras_bert_core.errors import DataError


@dataclasses.dataclass
class SquadExample:
    """One question about one context.

    Args:
        qas_id: the question's id.
        question: the question text.
        context: the passage the answer is cut from.
        answers: gold answer texts (several in evaluation sets; empty when impossible).
        answer_starts: character offset of each answer in `context`.
        is_impossible: SQuAD 2.0: the context holds no answer.

    Example:
    >>> example = SquadExample("q1", "Who?", "Ada wrote it.", ["Ada"], [0])
    >>> example.context[example.answer_starts[0]:][:len(example.answers[0])]
    'Ada'
    """

    qas_id: str
    question: str
    context: str
    answers: list = dataclasses.field(default_factory=list)
    answer_starts: list = dataclasses.field(default_factory=list)
    is_impossible: bool = False


def load_squad(path):
    """Reads a SQuAD v1.1 or v2.0 JSON file into `SquadExample`s.

    Args:
        path: the JSON file (`{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}`).

    Returns:
        A list of `SquadExample`, in file order.

    Raises:
        DataError: naming the file and the JSON location of a missing field, or of an
            answer whose text is not found at its `answer_start` in the context.

    Example:
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.json")
    >>> qa = {"id": "q1", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]}
    >>> _ = open(path, "w").write(json.dumps(
    ...     {"data": [{"paragraphs": [{"context": "Ada wrote it.", "qas": [qa]}]}]}))
    >>> load_squad(path)[0].answers
    ['Ada']
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8-sig") as f:  # drops a byte-order mark
            root = json.load(f)
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except json.JSONDecodeError as error:
        raise DataError(f"malformed JSON at character {error.colno}: {error.msg}",
                        path=path, line=error.lineno) from None

    def get(node, key, where, kind):
        if not isinstance(node, dict) or not isinstance(node.get(key), kind):
            raise DataError(f"{where}: expected a {kind.__name__} {key!r}", path=path)
        return node[key]

    examples = []
    for a, article in enumerate(get(root, "data", "top level", list)):
        for p, paragraph in enumerate(get(article, "paragraphs", f"data[{a}]", list)):
            where = f"data[{a}].paragraphs[{p}]"
            context = get(paragraph, "context", where, str)
            for q, qa in enumerate(get(paragraph, "qas", where, list)):
                where_qa = f"{where}.qas[{q}]"
                qas_id = get(qa, "id", where_qa, str)
                impossible = bool(qa.get("is_impossible", False))
                answers = [] if impossible else get(qa, "answers", where_qa, list)
                for n, answer in enumerate(answers):
                    for key, kind in (("text", str), ("answer_start", int)):
                        get(answer, key, f"{where_qa}.answers[{n}]", kind)
                examples.append(squad_example(
                    qas_id, get(qa, "question", where_qa, str), context,
                    [answer["text"] for answer in answers],
                    [answer["answer_start"] for answer in answers], impossible,
                    where=f"{path}, {where_qa}"))
    return examples


def squad_example(qas_id, question, context, answers, answer_starts, is_impossible=False,
                  where=None):
    """A `SquadExample`, checked: every answer must sit at its start offset in the context.

    Raises:
        DataError: naming `where` (the source), the question id and the misplaced answer.
    """
    for text, start in zip(answers, answer_starts, strict=True):
        found = context[start:start + len(text)]
        if found != text:
            raise DataError(f"question {qas_id!r}: answer {text!r} is not at answer_start "
                            f"{start} of the context (found {found!r} there)", path=where)
    return SquadExample(qas_id, question, context, list(answers), list(answer_starts),
                        is_impossible)
