"""Gradient caching (GradCache, Gao et al. 2021) for embedding models: a large batch's
contrastive loss and gradients computed mini-batch by mini-batch, in one mini-batch's memory."""

import keras
import tensorflow as tf

from keras_bert_core.keras_internals import loss_tracker, sublayers


def random_states(model):
    """The state variables of every seed generator in `model` (its dropout layers'): what a
    second pass must start from to draw the first pass's masks again."""
    return [value.state for layer in (model, *sublayers(model))
            for value in vars(layer).values() if isinstance(value, keras.random.SeedGenerator)]


def cached_train_step(model, data, mini_batch_size):
    """One training step of the embedding model `model` on `data`, with gradient caching.

    1. Embeds the batch `mini_batch_size` examples at a time, keeping only the vectors.
    2. Computes the loss over the whole batch's vectors (in-batch negatives: every other
       example of the batch, as without caching) and its gradient with respect to each
       vector.
    3. Embeds each mini-batch again, with the first pass's dropout masks (every seed
       generator restarts from its state before the first pass), backpropagates the
       mini-batch's share of that gradient, and sums the weights' gradients.
    4. Applies the sum with the model's optimizer.

    Memory holds one mini-batch's activations instead of the batch's, for a second forward
    pass; the loss and gradients are those of one pass over the whole batch with the same
    dropout masks, to float rounding. Takes `data` as Keras's `train_step` does and returns
    the metrics as it does.
    """
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    batch = tf.shape(tf.nest.flatten(x)[0])[0]
    count = (batch + mini_batch_size - 1) // mini_batch_size

    def rows(structure, index):
        start = index * mini_batch_size
        return tf.nest.map_structure(lambda t: t[start:start + mini_batch_size], structure)

    states = random_states(model)
    first_states = [tf.identity(state.value) for state in states]

    def embed(index, vectors):
        return index + 1, vectors.write(index, tf.stop_gradient(model(rows(x, index),
                                                                      training=True)))

    # The first mini-batch outside the loop: its vectors' shape is the other ones'.
    first = tf.stop_gradient(model(rows(x, 0), training=True))
    vectors = tf.TensorArray(first.dtype, size=count, infer_shape=False,
                             element_shape=tf.TensorShape([None, *first.shape[1:]]))
    _, vectors = tf.while_loop(lambda index, _: index < count, embed,
                               (1, vectors.write(0, first)))
    y_pred = vectors.concat()
    with tf.GradientTape() as tape:
        tape.watch(y_pred)
        loss = model.compute_loss(x, y, y_pred, sample_weight, training=True)
        # Keras tracks the unscaled mean (each replica's loss is scaled by 1 / replicas).
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        loss_tracker(model).update_state(loss * replicas, sample_weight=batch)
        loss = model.optimizer.scale_loss(loss)
    upstream = tape.gradient(loss, y_pred)
    for state, value in zip(states, first_states, strict=True):
        state.assign(value)

    weights = model.trainable_weights

    def gradients(index):
        with tf.GradientTape() as tape:
            vectors = model(rows(x, index), training=True)
        return tape.gradient(vectors, weights, output_gradients=rows(upstream, index))

    # The first mini-batch outside the loop: it tells which weights get a gradient at all
    # (Keras skips the others, as `apply_gradients` does without caching).
    first = gradients(0)
    trained = [index for index, gradient in enumerate(first) if gradient is not None]

    def add(index, sums):
        more = gradients(index)
        return index + 1, [total + tf.convert_to_tensor(more[i])
                           for total, i in zip(sums, trained, strict=True)]

    _, sums = tf.while_loop(lambda index, _: index < count, add,
                            (1, [tf.convert_to_tensor(first[i]) for i in trained]))
    model.optimizer.apply_gradients(zip(sums, [weights[i] for i in trained], strict=True))
    return model.compute_metrics(x, y, y_pred, sample_weight)
