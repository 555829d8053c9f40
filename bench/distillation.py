"""The cost of distillation: a `Distiller` training step against the student's plain
fine-tuning step (what running the teacher in the same step costs).

    python bench/distillation.py [--preset mini] [--student every-other-layer] [--batch 32]
                                 [--seq 128] [--rounds 3] [--steps 3] [--out FILE]

A `BertClassifier` teacher of `--preset` and a student (`every-other-layer`: the teacher's
every other layer, weights copied, as `kbc distill` makes it by default; or a preset), the
vocabulary 30522, dropout 0.1, one synthetic full-length batch repeated. Timed with `fit`
(a callback times each step from its start to its end), the variants taking turns, `--steps`
steps each per round after one untimed round:

- `finetune`: the student alone on the labels (its own loss), as `kbc finetune` trains it;
- `distill`: `Distiller(teacher, student)`, soft targets and labels (the teacher runs in
  inference mode in the same step);
- `distill_hidden_attention`: also the last-layer hidden-state and attention losses (both
  models compute every position of their last layer then);
- `teacher_inference`: the teacher's forward pass alone (`predict_on_batch`).

Prints one JSON line (and writes it to `--out`): the median seconds of each, and the
distillation steps' ratios to the fine-tuning step.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

from keras_bert_core.config import PRESETS  # noqa: E402


class _Fit:
    """`fit` on a repeated batch, `steps` at a time, returning each step's seconds."""

    def __init__(self, model, data):
        import keras

        self.model, self.data = model, data

        class StepClock(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                self.times = []

            def on_train_batch_begin(self, batch, logs=None):
                self.start = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                self.times.append(time.perf_counter() - self.start)

        self.clock = StepClock()

    def __call__(self, steps):
        self.model.fit(self.data, epochs=1, steps_per_epoch=steps, callbacks=[self.clock],
                       verbose=0)
        return list(self.clock.times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="mini",
                        help="the teacher's size")
    parser.add_argument("--student", default="every-other-layer",
                        help="'every-other-layer' or a preset")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="steps per variant per round")
    parser.add_argument("--out")
    args = parser.parse_args()

    import statistics

    import tensorflow as tf

    import keras_bert_core as kbc

    arrays = common.synthetic_batch(args.batch, args.seq)
    x = {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    y = arrays["labels"]
    data = tf.data.Dataset.from_tensors((x, y)).repeat()

    def config(preset):
        return kbc.BertConfig.preset(preset, vocab_size=common.VOCAB_SIZE,
                                     dropout=common.DROPOUT, attention_dropout=common.DROPOUT)

    teacher = kbc.BertClassifier(kbc.BertEncoder(config(args.preset)),
                                 num_classes=common.NUM_CLASSES)
    if args.student == "every-other-layer":
        student = kbc.make_distilbert_student(teacher)
    else:
        student = kbc.BertClassifier(kbc.BertEncoder(config(args.student)),
                                     num_classes=common.NUM_CLASSES)
    initial = student.get_weights()

    def optimizer():
        return kbc.BertAdamW(common.LEARNING_RATE)

    # Each variant trains its own copy of the student from the same weights.
    finetuned = kbc.BertClassifier.from_config(student.get_config())
    finetuned.set_weights(initial)
    finetuned.compile(optimizer=optimizer())
    variants = {"finetune": _Fit(finetuned, data)}
    for name, losses in (("distill", {}),
                         ("distill_hidden_attention",
                          {"hidden_weight": 1.0, "attention_weight": 1.0})):
        copy = kbc.BertClassifier.from_config(student.get_config())
        copy.set_weights(initial)
        distiller = kbc.Distiller(teacher, copy, **losses)
        distiller.compile(optimizer=optimizer())
        variants[name] = _Fit(distiller, data)

    def teacher_inference(steps):
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            teacher.predict_on_batch(x)
            times.append(time.perf_counter() - start)
        return times

    variants["teacher_inference"] = teacher_inference
    for run in variants.values():  # traces and warms up
        run(1)
    times = {name: [] for name in variants}
    names = list(variants)
    for index in range(args.rounds):
        start = index % len(names)
        for name in names[start:] + names[:start]:
            times[name].extend(variants[name](args.steps))
    medians = {name: statistics.median(values) for name, values in times.items()}
    common.emit({
        "benchmark": "distillation",
        "teacher": {"preset": args.preset, "parameters": int(teacher.count_params())},
        "student": {"kind": args.student, "layers": student.encoder.config.num_layers,
                    "parameters": int(student.count_params())},
        "batch": args.batch, "seq": args.seq,
        "median_step_s": medians,
        "steps": {name: len(values) for name, values in times.items()},
        "ratio_to_finetune": {name: medians[name] / medians["finetune"]
                              for name in ("distill", "distill_hidden_attention")},
        "machine": common.machine_info(),
        "tensorflow": tf.__version__,
    }, args.out)


if __name__ == "__main__":
    main()
