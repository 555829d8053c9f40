"""One framework's BERT training step, timed: fine-tuning (classifier) or pretraining (MLM + NSP).

    python bench/train_step.py --framework ours --task pretrain --preset mini --batch 32

Frameworks, each driven as its users drive it:
- `ours`: `BertClassifier` / `BertPretrainer` with their own losses and metrics, `fit`.
- `model_garden`: tf-models-official's `networks.BertEncoder` with `models.BertClassifier` /
  `models.BertPretrainerV2` (NSP as a `ClassificationHead`), `AdamWeightDecay`, and a
  `tf.function` train step like `official.core`'s (no XLA on CPU, its default).
- `keras_hub`: `BertBackbone` with `BertTextClassifier`, or with KerasHub's `MaskedLMHead`
  plus a next-sentence `Dense` (KerasHub has no NSP model), compiled, `fit`.

Every model has the same sizes, vocabulary 30522, tanh GELU, dropout 0.1, 20 masked
positions, and BERT's AdamW (weight decay 0.01 except LayerNorm and biases, epsilon 1e-6,
global clip norm 1). Keras picks `jit_compile=False` on a CPU-only machine; `--jit` turns
XLA on for all. Prints one JSON line; run one framework per process (tf_keras and Keras 3
do not share one).

`--serve` is for bench/run_all.py, which times the frameworks in turns: after the warm-up
the script prints `{"ready": true}`, then runs as many timed steps as each line of standard
input asks for, printing `{"times": [...]}` for each, and ends with its usual JSON line
(over all its timed steps) at an empty line or the end of input.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def keras_fit_run(model, x, y, sample_weight):
    """Runs `fit` for warm-up plus timed steps; a callback times every step from its start
    to its end, so the times include Keras's own per-step work, as a user's `fit` pays it."""
    import time

    import keras
    import tensorflow as tf

    data = tf.data.Dataset.from_tensors((x, y, sample_weight)).repeat()

    class StepClock(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.times, self.losses = [], []

        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.losses.append(float(logs["loss"]))
            self.times.append(time.perf_counter() - self.start)

    def run(warmup, steps):
        clock = StepClock()
        model.fit(data, epochs=1, steps_per_epoch=warmup + steps, callbacks=[clock], verbose=0)
        return clock.times[warmup:], clock.losses

    return run


def build_ours(args, arrays, **compile_overrides):
    model, x, y, weights = ours_compiled(args, arrays, **compile_overrides)
    return model, keras_fit_run(model, x, y, weights)


def ours_compiled(args, arrays, **compile_overrides):
    """Our task model, compiled as `fit` runs it, and its training data `(x, y, weights)`."""
    import keras_bert_core as kbc
    from keras_bert_core.models import BertClassifier, BertPretrainer

    config = kbc.BertConfig.preset(args.preset, vocab_size=common.VOCAB_SIZE,
                                   hidden_act="gelu_approximate", dropout=common.DROPOUT,
                                   attention_dropout=common.DROPOUT)
    encoder = kbc.BertEncoder(config, one_hot_embeddings=args.one_hot, remat=args.remat == "on")
    x = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    if args.task == "finetune":
        model = BertClassifier(encoder, num_classes=common.NUM_CLASSES)
        y, weights = arrays["labels"], None
    else:
        model = BertPretrainer(encoder)
        x["masked_positions"] = arrays["masked_positions"]
        y = {"mlm": arrays["masked_ids"], "nsp": arrays["labels"]}
        weights = {"mlm": arrays["masked_weights"]}
    # The package's AdamW (the task models' default) with the shared settings.
    optimizer = kbc.BertAdamW(
        common.LEARNING_RATE, weight_decay=common.ADAMW["weight_decay"],
        epsilon=common.ADAMW["epsilon"], global_clipnorm=common.ADAMW["global_clipnorm"],
        weight_decay_exclusions=common.ADAMW["exclude_from_weight_decay"])
    # The task model's own loss and metrics; only the optimizer and XLA are set here
    # (`compile_overrides` are for the ablations of bench/ablations.py).
    model.compile(**{"optimizer": optimizer, "jit_compile": args.jit, **compile_overrides})
    return model, x, y, weights


def build_keras_hub(args, arrays, **compile_overrides):
    import keras
    import keras_hub

    size = common.PRESETS[args.preset]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE, num_layers=size["num_layers"],
        num_heads=size["num_heads"], hidden_dim=size["hidden_size"],
        intermediate_dim=size["intermediate_size"], dropout=common.DROPOUT)
    x = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if args.task == "finetune":
        model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=common.NUM_CLASSES, preprocessor=None, dropout=common.DROPOUT)
        y, weights, losses, metrics, weighted = arrays["labels"], None, loss, [accuracy], None
    else:
        # KerasHub's BertMaskedLM has no next-sentence head: compose the same pretrainer from
        # its backbone and MaskedLMHead, and a dense NSP layer on the pooled output.
        inputs = {**backbone.input, "mask_positions": keras.Input(
            shape=(None,), dtype="int32", name="mask_positions")}
        outputs = backbone({name: inputs[name] for name in backbone.input})
        mlm = keras_hub.layers.MaskedLMHead(
            vocabulary_size=common.VOCAB_SIZE, token_embedding=backbone.token_embedding,
            intermediate_activation="gelu", layer_norm_epsilon=1e-12,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="mlm")(outputs["sequence_output"], inputs["mask_positions"])
        nsp = keras.layers.Dense(common.NUM_CLASSES, name="nsp")(
            keras.layers.Dropout(common.DROPOUT)(outputs["pooled_output"]))
        model = keras.Model(inputs, {"mlm": mlm, "nsp": nsp})
        x["mask_positions"] = arrays["masked_positions"]
        y = {"mlm": arrays["masked_ids"], "nsp": arrays["labels"]}
        weights = {"mlm": arrays["masked_weights"], "nsp": None}
        losses = {"mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
        metrics = {"nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        weighted = {"mlm": [accuracy]}
    optimizer = keras.optimizers.AdamW(
        common.LEARNING_RATE, weight_decay=common.ADAMW["weight_decay"],
        epsilon=common.ADAMW["epsilon"], global_clipnorm=common.ADAMW["global_clipnorm"])
    optimizer.exclude_from_weight_decay(var_names=common.ADAMW["exclude_from_weight_decay"])
    compile_args = {"optimizer": optimizer, "loss": losses, "metrics": metrics,
                    "weighted_metrics": weighted, "jit_compile": args.jit, **compile_overrides}
    model.compile(**compile_args)
    return model, keras_fit_run(model, x, y, weights)


def build_model_garden(args, arrays):
    import tensorflow as tf
    import tf_keras
    from official.modeling.optimization import legacy_adamw
    from official.nlp.modeling import layers, models, networks

    size = common.PRESETS[args.preset]
    init = tf_keras.initializers.TruncatedNormal(stddev=0.02)
    encoder = networks.BertEncoder(
        vocab_size=common.VOCAB_SIZE, hidden_size=size["hidden_size"],
        num_layers=size["num_layers"], num_attention_heads=size["num_heads"],
        inner_dim=size["intermediate_size"], type_vocab_size=2, output_dropout=common.DROPOUT,
        attention_dropout=common.DROPOUT, initializer=init)
    features = {"input_word_ids": arrays["token_ids"], "input_type_ids": arrays["segment_ids"],
                "input_mask": arrays["padding_mask"]}
    accuracy = tf_keras.metrics.SparseCategoricalAccuracy()
    if args.task == "finetune":
        model = models.BertClassifier(encoder, num_classes=common.NUM_CLASSES,
                                      initializer=init, dropout_rate=common.DROPOUT)
        labels = {"labels": arrays["labels"]}

        def compute_loss(outputs, labels):
            accuracy.update_state(labels["labels"], outputs)
            return tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
                labels["labels"], tf.cast(outputs, tf.float32), from_logits=True))
    else:
        # As official/nlp/configs/bert.py builds it: NSP is a ClassificationHead on [CLS].
        model = models.BertPretrainerV2(
            encoder, mlm_activation=tf_keras.activations.get("gelu"), mlm_initializer=init,
            classification_heads=[layers.ClassificationHead(
                inner_dim=size["hidden_size"], num_classes=common.NUM_CLASSES,
                dropout_rate=common.DROPOUT, initializer=init, name="next_sentence")])
        features["masked_lm_positions"] = arrays["masked_positions"]
        labels = {"masked_lm_ids": arrays["masked_ids"],
                  "masked_lm_weights": arrays["masked_weights"],
                  "next_sentence_labels": arrays["labels"]}

        def compute_loss(outputs, labels):
            # official/nlp/tasks/masked_lm.py's loss: weighted MLM mean plus NSP mean.
            mlm = tf_keras.losses.sparse_categorical_crossentropy(
                labels["masked_lm_ids"], tf.cast(outputs["mlm_logits"], tf.float32),
                from_logits=True)
            weights = labels["masked_lm_weights"]
            mlm = tf.math.divide_no_nan(tf.reduce_sum(mlm * weights), tf.reduce_sum(weights))
            accuracy.update_state(labels["masked_lm_ids"], outputs["mlm_logits"], weights)
            nsp = tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
                labels["next_sentence_labels"], tf.cast(outputs["next_sentence"], tf.float32),
                from_logits=True))
            return mlm + nsp

    optimizer = legacy_adamw.AdamWeightDecay(
        learning_rate=common.LEARNING_RATE, weight_decay_rate=common.ADAMW["weight_decay"],
        epsilon=common.ADAMW["epsilon"], gradient_clip_norm=common.ADAMW["global_clipnorm"],
        exclude_from_weight_decay=common.ADAMW["exclude_from_weight_decay"])
    iterator = iter(tf.data.Dataset.from_tensors((features, labels)).repeat())

    # orbit's StandardTrainer: the iterator goes into the tf.function, one step per call.
    @tf.function(jit_compile=args.jit)
    def train_step(iterator):
        features, labels = next(iterator)
        with tf.GradientTape() as tape:
            loss = compute_loss(model(features, training=True), labels)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    def run(warmup, steps):
        losses = []
        times = common.step_times(lambda: losses.append(float(train_step(iterator))),
                                  warmup, steps)
        return times, losses

    return model, run


BUILDERS = {"ours": build_ours, "model_garden": build_model_garden, "keras_hub": build_keras_hub}


def argument_parser(description=__doc__, framework="required"):
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(BUILDERS),
                        required=framework == "required", default=framework)
    parser.add_argument("--task", choices=("finetune", "pretrain"), required=True)
    parser.add_argument("--preset", choices=sorted(common.PRESETS), default="mini")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps (tracing)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--jit", action="store_true", help="compile the step with XLA")
    parser.add_argument("--remat", choices=("off", "on"), default="off",
                        help="ours: BertEncoder(remat=True), each block recomputed in backward")
    parser.add_argument("--one-hot", action="store_true",
                        help="ours: BertEncoder(one_hot_embeddings=True)")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--serve", action="store_true",
                        help="after the warm-up, run the timed steps that standard input "
                             "asks for (see above); --steps is then unused")
    return parser


def serve(run, warmup):
    """`--serve`: warms up, then runs the timed steps each line of standard input asks for;
    the times and losses of all of them."""
    _, losses = run(max(warmup, 1), 0)
    print(json.dumps({"ready": True}), flush=True)
    times = []
    for line in sys.stdin:
        if not line.strip():
            break
        step_times, step_losses = run(0, int(line))
        times += step_times
        losses += step_losses
        print(json.dumps({"times": step_times}), flush=True)
    return times, losses


def main():
    args = argument_parser().parse_args()
    import tensorflow as tf

    arrays = common.synthetic_batch(args.batch, args.seq)
    model, run = BUILDERS[args.framework](args, arrays)
    rss_before = common.current_rss_mb()
    if args.serve:
        times, losses = serve(run, args.warmup)
    else:
        times, losses = run(max(args.warmup, 1), args.steps)
    timing = common.summarize(times)
    flops = common.training_flops(args.preset, args.batch, args.seq, args.task)
    common.emit({
        "benchmark": "train_step", "framework": args.framework, "task": args.task,
        "preset": args.preset, "batch": args.batch, "seq": args.seq, "jit_compile": args.jit,
        "remat": args.remat, "one_hot_embeddings": args.one_hot,
        "parameters": int(sum(int(tf.size(v)) for v in model.trainable_variables)),
        **timing,
        "sequences_per_s": args.batch / timing["median_s"],
        "tokens_per_s": args.batch * args.seq / timing["median_s"],
        "flops_per_step": flops,
        "flops_per_s": flops / timing["median_s"],
        "first_loss": losses[0], "last_loss": losses[-1],
        "rss_before_training_mb": round(rss_before, 1),
        "tensorflow": tf.__version__,
    }, args.out)


if __name__ == "__main__":
    main()
