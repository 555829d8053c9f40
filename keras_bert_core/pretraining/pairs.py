"""Sentence pairs for next-sentence prediction or sentence-order prediction (or single
segments, for masked LM alone), made in the graph and streaming as google-research's
`create_pretraining_data.py` (BERT's, and ALBERT's for sentence order) makes them: the
"random next" segment comes from a bounded window of shuffled documents instead of the
whole corpus held in memory."""

import tensorflow as tf

from keras_bert_core.pretraining.corpus import read_documents
from keras_bert_core.text.corpus_files import expand_text_files


def seed_stream(seed, salt):
    """Per-element stateless seeds: the same sequence for a seed, new values each epoch."""
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    return seeds.map(lambda s: tf.random.experimental.stateless_fold_in(s, salt))


# The tasks on a pair of segments; None is masked LM alone (one segment a row).
PAIR_TASKS = ("next_sentence", "sentence_order")


def resolve_pair_task(pair_task="next_sentence", next_sentence=None):
    """The pair task that `pair_task` and the older `next_sentence` flag ask for together.

    `next_sentence` (True: pairs for next-sentence prediction, False: masked LM alone) is
    kept for existing callers; given, it must agree with `pair_task` unless that is left at
    its default.

    >>> resolve_pair_task(next_sentence=False) is None
    True
    >>> resolve_pair_task("sentence_order")
    'sentence_order'
    """
    if pair_task not in (*PAIR_TASKS, None):
        raise ValueError(f"pair_task must be one of {[*PAIR_TASKS, None]}, got {pair_task!r}.")
    if next_sentence is None:
        return pair_task
    implied = "next_sentence" if next_sentence else None
    if pair_task not in ("next_sentence", implied):
        raise ValueError(f"next_sentence={next_sentence} contradicts pair_task={pair_task!r}; "
                         "pass pair_task alone.")
    return implied


def _random_int(u, low, high):
    """Maps a uniform [0, 1) float to an int64 in [low, high], inclusive."""
    span = high - low + 1
    return low + tf.minimum(tf.cast(u * tf.cast(span, tf.float32), tf.int64), span - 1)


def _pair_instances(docs, seed, max_num_tokens, short_seq_prob, pair_task="next_sentence"):
    """Sentence-pair instances from a window of tokenized documents.

    Follows google-research's `create_instances_from_document`: consecutive sentences
    fill a chunk up to a target length (`max_num_tokens`, or with probability
    `short_seq_prob` a random length in [2, max_num_tokens]); the chunk splits at a
    random sentence into A and B; with probability 1/2 (always for a one-sentence chunk)
    B is instead a run of sentences from a random other document of the window, and the
    unused sentences go back to the document. The longer side is then trimmed one token
    at a time, from the front or the back at random, until the pair fits. (google-research
    draws the target length once per document; here each chunk draws its own.)

    With `pair_task="sentence_order"` (ALBERT's sentence-order prediction) B is always the
    rest of the chunk, and with probability 1/2 A and B swap places (label 1) before
    trimming. A one-sentence chunk splits inside its sentence at a random token (and is
    left out if the sentence is one token long): ALBERT's script gives such a chunk a
    random B from another document, which would leave a topic cue in the labels.

    All documents advance together: each loop step makes the next instance of every
    document that has sentences left. With `pair_task=None` the whole chunk is A and B is
    empty (trimming then cuts A alone).

    Args:
        docs: int ragged `[K, (sentences), (tokens)]`, no empty documents or sentences.
        seed: int64 `[2]` stateless seed.
        max_num_tokens: int, the room for A + B.
        short_seq_prob: float.
        pair_task: "next_sentence", "sentence_order" or None (no pairs).

    Returns:
        `(tokens_a, tokens_b, labels)`: ragged `[M, (tokens)]` twice, int32 `[M]`: 1 where
        B is random (next sentence) or where A and B are swapped (sentence order).
    """
    offsets = docs.values.row_splits  # Where each sentence starts in the flat tokens.
    doc_start, doc_end = docs.row_splits[:-1], docs.row_splits[1:]  # In sentences.
    num_docs = docs.nrows()
    doc = tf.range(num_docs)

    def sentences_to_reach(start, stop, target):
        """Sentences from `start` it takes to reach `target` tokens: at least 1, all if never."""
        reach = tf.searchsorted(offsets, tf.gather(offsets, start) + target, out_type=tf.int64)
        return tf.clip_by_value(reach - start, 1, stop - start)

    def make_instances(step, position, instances):
        active = position < doc_end
        i = tf.minimum(position, doc_end - 1)
        uniform_seed, binomial_seed = tf.unstack(
            tf.random.experimental.stateless_split(
                tf.random.experimental.stateless_fold_in(seed, step), 2
            )
        )
        u = tf.random.stateless_uniform([6, num_docs], uniform_seed)
        target = tf.where(
            u[0] < short_seq_prob, _random_int(u[1], 2, max_num_tokens), max_num_tokens
        )
        chunk = sentences_to_reach(i, doc_end, target)
        no_random = tf.zeros_like(chunk, tf.bool)
        if pair_task is None:  # B, from a_end to the chunk's end, is empty
            num_a, is_random, label = chunk, no_random, no_random
        else:
            num_a = tf.where(chunk > 1, _random_int(u[2], 1, chunk - 1), 1)
            if pair_task == "next_sentence":
                is_random = label = (chunk == 1) | (u[3] < 0.5)
            else:
                is_random, label = no_random, u[3] < 0.5  # label: swapped
        a_start, a_end = tf.gather(offsets, i), tf.gather(offsets, i + num_a)
        if pair_task == "sentence_order":
            # A one-sentence chunk splits inside the sentence; u[5] is unused in this task.
            sentence_length = a_end - a_start
            split = tf.where(
                sentence_length > 1, _random_int(u[5], 1, sentence_length - 1), sentence_length
            )
            a_end = tf.where(chunk == 1, a_start + split, a_end)

        # A window of one document can only draw from itself, as google-research falls
        # back to when it finds no other document.
        other = _random_int(u[4], 0, num_docs - 2)
        other = tf.where(num_docs > 1, other + tf.cast(other >= doc, tf.int64), doc)
        first, stop = tf.gather(doc_start, other), tf.gather(doc_end, other)
        start = first + _random_int(u[5], 0, stop - first - 1)
        num_b = sentences_to_reach(start, stop, target - (a_end - a_start))
        b_start = tf.where(is_random, tf.gather(offsets, start), a_end)
        b_end = tf.gather(offsets, tf.where(is_random, start + num_b, i + chunk))
        if pair_task == "sentence_order":
            a_start, a_end, b_start, b_end = (
                tf.where(label, b_start, a_start),
                tf.where(label, b_end, a_end),
                tf.where(label, a_start, b_start),
                tf.where(label, a_end, b_end),
            )
            # A one-token sentence alone makes no pair.
            active &= (a_end > a_start) & (b_end > b_start)

        # Trimming the longer side one token at a time (ties trim B) removes, in total:
        len_a, len_b = a_end - a_start, b_end - b_start
        excess = tf.maximum(len_a + len_b - max_num_tokens, 0)
        uneven = tf.minimum(excess, tf.abs(len_a - len_b))
        even = excess - uneven
        a_longer = tf.cast(len_a > len_b, tf.int64)
        cuts = tf.stack([a_longer * uneven + even // 2, (1 - a_longer) * uneven + (even + 1) // 2])
        # Each removed token comes from the front with probability 1/2.
        front = tf.cast(
            tf.random.stateless_binomial(
                [2, num_docs], binomial_seed, tf.cast(cuts, tf.float32), 0.5
            ),
            tf.int64,
        )
        back = cuts - front
        columns = [
            a_start + front[0],
            a_end - back[0],
            b_start + front[1],
            b_end - back[1],
            tf.cast(label, tf.int64),
        ]
        instances = instances.write(
            tf.cast(step, tf.int32), tf.boolean_mask(tf.stack(columns, axis=1), active)
        )
        advance = tf.where(is_random, num_a, chunk)
        return step + 1, tf.where(position < doc_end, i + advance, position), instances

    instances = tf.TensorArray(
        tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None, 5]
    )
    _, _, instances = tf.while_loop(
        lambda step, position, instances: tf.reduce_any(position < doc_end),
        make_instances,
        (tf.constant(0, tf.int64), doc_start, instances),
    )
    instances = instances.concat()
    tokens = docs.flat_values
    tokens_a = tf.gather(tokens, tf.ragged.range(instances[:, 0], instances[:, 1]))
    tokens_b = tf.gather(tokens, tf.ragged.range(instances[:, 2], instances[:, 3]))
    return tokens_a, tokens_b, tf.cast(instances[:, 4], tf.int32)


def sentence_pairs(
    files, tokenizer, seq_length, short_seq_prob, seed, document_buffer_size, window_size,
    pair_task,
):
    """A stream of `(tokens_a, tokens_b, label)`, new pairs each epoch, for `pair_task`
    (see `_pair_instances`; B empty and the label 0 when it is None)."""
    if pair_task not in (*PAIR_TASKS, None):
        raise ValueError(f"pair_task must be one of {[*PAIR_TASKS, None]}, got {pair_task!r}.")
    special_tokens = 2 if pair_task is None else 3
    if seq_length < special_tokens + 2:
        raise ValueError(f"seq_length must be at least {special_tokens + 2}, got {seq_length}.")
    files = expand_text_files(files)
    docs = (
        tf.data.Dataset.from_tensor_slices(files)
        .shuffle(len(files), seed=seed)
        .interleave(
            read_documents,
            cycle_length=min(len(files), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        .shuffle(document_buffer_size, seed=seed)
        .ragged_batch(window_size)
    )

    def window_pairs(window, window_seed):
        pieces = tokenizer(window.flat_values).with_row_splits_dtype(tf.int64)
        docs = window.with_values(pieces)
        docs = tf.ragged.boolean_mask(docs, docs.row_lengths(axis=2) > 0)
        docs = tf.ragged.boolean_mask(docs, docs.row_lengths() > 0)
        return _pair_instances(docs, window_seed, seq_length - special_tokens, short_seq_prob,
                               pair_task)

    pairs = tf.data.Dataset.zip(docs, seed_stream(seed, 0)).map(
        window_pairs, num_parallel_calls=tf.data.AUTOTUNE
    )
    return pairs.unbatch()
