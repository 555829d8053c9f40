"""Entity-level scores of tag sequences, as conlleval and seqeval's default mode count them."""

from __future__ import annotations


def _split_tag(tag):
    """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
    prefix, _, entity_type = tag.partition("-")
    return ("O", "") if prefix == "O" else (prefix, entity_type)


def get_entities(tags):
    """Entity chunks `(type, start, end)` (end exclusive) in a tag sequence.

    Follows conlleval's chunking, so IOB2 (BIO), IOB1 and IOBES tags all work: an `I-` tag
    after `O` or after another type starts an entity, and a type change ends one.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5)]
    """
    entities = []
    prev_prefix, prev_type, start = "O", "", None
    for position, tag in enumerate([*tags, "O"]):
        prefix, entity_type = _split_tag(tag)
        ends = (prev_prefix in ("E", "S")
                or (prev_prefix in ("B", "I") and prefix in ("B", "S", "O"))
                or (prev_prefix != "O" and prev_type != entity_type))
        starts = (prefix in ("B", "S")
                  or (prev_prefix in ("E", "S", "O") and prefix in ("I", "E"))
                  or (prefix != "O" and prev_type != entity_type))
        if ends and start is not None:
            entities.append((prev_type, start, position))
            start = None
        if starts:
            start = position
        prev_prefix, prev_type = prefix, entity_type
    return entities


def entity_scores(true_tags, predicted_tags):
    """Entity-level precision, recall and F1 (micro-averaged), as conlleval computes them.

    An entity counts as right only when its type, start and end all match.

    Args:
        true_tags: a list of sentences, each a list of tag names.
        predicted_tags: the same shape of predicted tag names.

    Returns:
        A dict with `precision`, `recall`, `f1` (fractions in [0, 1]) and `per_type`, a dict
        from entity type to its own `precision`, `recall`, `f1` and `support` (true count).

    Example:
    >>> scores = entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    >>> scores["f1"], scores["per_type"]["PER"]["support"]
    (0.0, 1)
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted")
    true_set, predicted_set = set(), set()
    for index, (truth, predicted) in enumerate(zip(true_tags, predicted_tags, strict=True)):
        if len(truth) != len(predicted):
            raise ValueError(f"sentence {index}: {len(truth)} true tags but "
                             f"{len(predicted)} predicted")
        true_set.update((index, *entity) for entity in get_entities(truth))
        predicted_set.update((index, *entity) for entity in get_entities(predicted))

    def scores(truth, predicted):
        correct = len(truth & predicted)
        precision = correct / len(predicted) if predicted else 0.0
        recall = correct / len(truth) if truth else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "support": len(truth)}

    types = sorted({entity[1] for entity in true_set | predicted_set})
    per_type = {entity_type: scores({e for e in true_set if e[1] == entity_type},
                                    {e for e in predicted_set if e[1] == entity_type})
                for entity_type in types}
    overall = scores(true_set, predicted_set)
    del overall["support"]
    return {**overall, "per_type": per_type}
