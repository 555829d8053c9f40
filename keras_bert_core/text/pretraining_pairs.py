"""Sentence pairs for next-sentence prediction (or single segments, for masked LM alone),
made in the graph and streaming as google-research's `create_pretraining_data.py` makes them:
the "random next" segment comes from a bounded window of shuffled documents instead of the
whole corpus held in memory."""

import tensorflow as tf

from keras_bert_core.text.pretraining_corpus import expand_text_files, read_documents


def seed_stream(seed, salt):
    """Per-element stateless seeds: the same sequence for a seed, new values each epoch."""
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    return seeds.map(lambda s: tf.random.experimental.stateless_fold_in(s, salt))


def _random_int(u, low, high):
    """Maps a uniform [0, 1) float to an int64 in [low, high], inclusive."""
    span = high - low + 1
    return low + tf.minimum(tf.cast(u * tf.cast(span, tf.float32), tf.int64), span - 1)


def _pair_instances(docs, seed, max_num_tokens, short_seq_prob, next_sentence=True):
    """Sentence-pair instances from a window of tokenized documents.

    Follows google-research's `create_instances_from_document`: consecutive sentences
    fill a chunk up to a target length (`max_num_tokens`, or with probability
    `short_seq_prob` a random length in [2, max_num_tokens]); the chunk splits at a
    random sentence into A and B; with probability 1/2 (always for a one-sentence chunk)
    B is instead a run of sentences from a random other document of the window, and the
    unused sentences go back to the document. The longer side is then trimmed one token
    at a time, from the front or the back at random, until the pair fits. (google-research
    draws the target length once per document; here each chunk draws its own.)

    All documents advance together: each loop step makes the next instance of every
    document that has sentences left. With `next_sentence=False` the whole chunk is A and
    B is empty (trimming then cuts A alone).

    Args:
        docs: int ragged `[K, (sentences), (tokens)]`, no empty documents or sentences.
        seed: int64 `[2]` stateless seed.
        max_num_tokens: int, the room for A + B.
        short_seq_prob: float.
        next_sentence: bool, whether to split chunks into pairs.

    Returns:
        `(tokens_a, tokens_b, labels)`: ragged `[M, (tokens)]` twice, int32 `[M]`.
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
        if next_sentence:
            num_a = tf.where(chunk > 1, _random_int(u[2], 1, chunk - 1), 1)
            is_random = (chunk == 1) | (u[3] < 0.5)
        else:  # B, from a_end to the chunk's end, is empty
            num_a, is_random = chunk, tf.zeros_like(chunk, tf.bool)
        a_start, a_end = tf.gather(offsets, i), tf.gather(offsets, i + num_a)

        # A window of one document can only draw from itself, as google-research falls
        # back to when it finds no other document.
        other = _random_int(u[4], 0, num_docs - 2)
        other = tf.where(num_docs > 1, other + tf.cast(other >= doc, tf.int64), doc)
        first, stop = tf.gather(doc_start, other), tf.gather(doc_end, other)
        start = first + _random_int(u[5], 0, stop - first - 1)
        num_b = sentences_to_reach(start, stop, target - (a_end - a_start))
        b_start = tf.where(is_random, tf.gather(offsets, start), a_end)
        b_end = tf.gather(offsets, tf.where(is_random, start + num_b, i + chunk))

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
            tf.cast(is_random, tf.int64),
        ]
        instances = instances.write(
            tf.cast(step, tf.int32), tf.boolean_mask(tf.stack(columns, axis=1), active)
        )
        advance = tf.where(is_random, num_a, chunk)
        return step + 1, tf.where(active, i + advance, position), instances

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
    next_sentence,
):
    """A stream of `(tokens_a, tokens_b, next_sentence_label)`, new pairs each epoch (B
    empty and the label 0 without `next_sentence`)."""
    special_tokens = 3 if next_sentence else 2
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
                               next_sentence)

    pairs = tf.data.Dataset.zip(docs, seed_stream(seed, 0)).map(
        window_pairs, num_parallel_calls=tf.data.AUTOTUNE
    )
    return pairs.unbatch()
