"""Training checks that need real accelerators: mirrored training with and without XLA, and
mixed precision, through `keras_bert_core.training`.

CI has no GPU, so these run by hand on a GPU machine (one GPU is split into two logical GPUs,
so `MirroredStrategy` has two replicas):

    python bench/gpu_checks.py --output gpu_checks.json

Every check trains a `mini` BertClassifier for a few steps from the same initial weights and
reports its losses; the float32 ones are compared with the one-device, no-XLA run. Mirrored
training with `jit_compile=True` takes the task models' per-replica XLA step (Keras's own
whole-step XLA fails across replicas, keras-team/keras#19005). Then `base` pretraining at
seq 128 with mixed precision + XLA is timed on one device (sequences/s). Exit status 1 when
any check fails. `--device cpu` runs the same checks on two logical CPUs, to test the script.
"""

import argparse
import json
import sys
import time

import numpy as np
import tensorflow as tf

STEPS, GLOBAL_BATCH, SEQ = 6, 32, 128
# TF32 matmuls (on by default on Ampere and later) make float32 runs differ by ~1e-3.
LOSS_TOLERANCE = 5e-3


def two_logical_devices(kind):
    """Names of two devices of `kind`, splitting a single physical one (before TF starts)."""
    physical = tf.config.list_physical_devices(kind)
    if not physical:
        sys.exit(f"No {kind} is visible.")
    if len(physical) == 1:
        # A logical GPU needs a memory limit; 8 GB each is plenty for the `mini` model.
        limit = 8192 if kind == "GPU" else None
        tf.config.set_logical_device_configuration(
            physical[0], [tf.config.LogicalDeviceConfiguration(memory_limit=limit)] * 2)
    return [device.name for device in tf.config.list_logical_devices(kind)[:2]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    parser.add_argument("--output", help="also write the results to this JSON file")
    parser.add_argument("--batch", type=int, default=64,
                        help="per-step batch of the base throughput run")
    args = parser.parse_args()
    devices = two_logical_devices(args.device.upper())

    import keras

    import keras_bert_core as kbc
    from keras_bert_core.models.classifier import BertClassifier
    from keras_bert_core.optimizers import create_optimizer
    from keras_bert_core.training import distribution_strategy

    config = kbc.BertConfig.preset("mini", dropout=0.0, attention_dropout=0.0)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, config.vocab_size, size=(GLOBAL_BATCH * STEPS, SEQ)).astype("int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    y = (ids[:, 1] % 2).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH, drop_remainder=True)
    one_device = tf.distribute.OneDeviceStrategy(devices[0])
    mirrored = distribution_strategy("mirrored", devices=devices)
    initial = BertClassifier(kbc.BertEncoder(config), num_classes=2).get_weights()

    def train(strategy, policy="float32", jit_compile=False, one_hot=False):
        keras.config.set_dtype_policy(policy)
        try:
            with strategy.scope():
                encoder = kbc.BertEncoder(config, one_hot_embeddings=one_hot)
                model = BertClassifier(encoder, num_classes=2, dropout=0.0)
                model.set_weights(initial)
                model.compile(optimizer=create_optimizer(1e-4, STEPS, 1), jit_compile=jit_compile)
            start = time.perf_counter()
            # One step per epoch: each epoch's loss is that step's loss.
            history = model.fit(dataset, steps_per_epoch=1, epochs=STEPS, verbose=0)
        finally:
            keras.config.set_dtype_policy("float32")
        return {"losses": history.history["loss"], "seconds": time.perf_counter() - start,
                "jit_compile": model.jit_compile,
                "jit_compile_per_replica": model.jit_compile_per_replica,
                "optimizer": type(model.optimizer).__name__}

    checks = {
        "one_device": dict(strategy=one_device),
        "one_device_xla": dict(strategy=one_device, jit_compile=True),
        "one_device_bfloat16_xla": dict(strategy=one_device, policy="mixed_bfloat16",
                                        jit_compile=True),
        "mirrored": dict(strategy=mirrored),
        "mirrored_float16": dict(strategy=mirrored, policy="mixed_float16"),
        "mirrored_bfloat16": dict(strategy=mirrored, policy="mixed_bfloat16"),
        "mirrored_xla": dict(strategy=mirrored, jit_compile=True),
        "mirrored_xla_one_hot_embeddings": dict(strategy=mirrored, jit_compile=True,
                                                one_hot=True),
        "mirrored_float16_xla": dict(strategy=mirrored, policy="mixed_float16",
                                     jit_compile=True),
        "mirrored_bfloat16_xla": dict(strategy=mirrored, policy="mixed_bfloat16",
                                      jit_compile=True),
    }
    results = {}
    for name, kwargs in checks.items():
        try:
            result = {"status": "ok", **train(**kwargs)}
        except Exception as e:  # a failing check is a result, not the end of the script
            # TensorFlow puts the cause at the end of a long message.
            result = {"status": "failed",
                      "error": f"{type(e).__name__}: ...{' '.join(str(e).split())[-400:]}"}
        if result["status"] == "ok":
            losses = np.array(result["losses"])
            if not np.all(np.isfinite(losses)):
                result["status"] = "failed"
            elif kwargs.get("policy", "float32") == "float32" and name != "one_device":
                reference = np.array(results["one_device"]["losses"])
                result["max_loss_difference"] = float(np.max(np.abs(losses - reference)))
                if result["max_loss_difference"] > LOSS_TOLERANCE:
                    result["status"] = "failed"
        results[name] = result
        print(f"{name:34s} {result['status']}  "
              + json.dumps({k: v for k, v in result.items() if k != "status"}), flush=True)

    throughput = {policy: base_pretraining_throughput(policy, args.batch)
                  for policy in ("mixed_float16", "mixed_bfloat16")}
    try:  # ELECTRA's replaced-token detection on the same encoder (a quarter-size generator)
        throughput["electra_mixed_bfloat16"] = base_pretraining_throughput(
            "mixed_bfloat16", args.batch, objective="electra")
    except Exception as e:  # a result, as the checks' failures are
        throughput["electra_mixed_bfloat16"] = {"status": "failed", "error": repr(e)[-400:]}
    print("base pretraining, seq 128, XLA, one device: " + json.dumps(throughput), flush=True)
    summary = {"devices": devices, "tensorflow": tf.__version__, "keras": keras.__version__,
               "checks": results, "base_pretraining_throughput": throughput}
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    failed = [name for name, result in results.items() if result["status"] != "ok"]
    if failed:
        print(f"Failed: {failed}")
    return 1 if failed else 0


def base_pretraining_throughput(policy, batch, steps=20, warmup=3, objective="mlm"):
    """Sequences/s of `base` MLM + NSP pretraining at seq 128 (20 masked positions) with
    `policy` and XLA on the first device, and the model FLOP/s (`bench/common.py`'s count);
    with `objective="electra"`, of ELECTRA's (`ElectraPretrainer`, generator 0.25; its
    FLOPs are not counted)."""
    import keras

    import keras_bert_core as kbc

    sys.path.insert(0, "bench")
    from common import synthetic_batch, training_flops

    config = kbc.BertConfig.preset("base")
    arrays = synthetic_batch(batch, SEQ)
    x = {name: arrays[name] for name in
         ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
    y = {"mlm": arrays["masked_ids"], "nsp": arrays["labels"] % 2}
    if objective == "electra":
        y = {"mlm": arrays["masked_ids"]}
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()
    keras.config.set_dtype_policy(policy)
    try:
        encoder = kbc.BertEncoder(config)
        model = (kbc.ElectraPretrainer(encoder) if objective == "electra"
                 else kbc.BertPretrainer(encoder))
        model.compile(jit_compile=True)
        times = []

        class Clock(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                self.start = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                float(logs["loss"])  # wait for the step
                times.append(time.perf_counter() - self.start)

        model.fit(dataset, steps_per_epoch=warmup + steps, callbacks=[Clock()], verbose=0)
    finally:
        keras.config.set_dtype_policy("float32")
    seconds = float(np.median(times[warmup:]))
    result = {"batch": batch, "seconds_per_step": seconds,
              "sequences_per_second": batch / seconds}
    if objective == "mlm":
        flops = training_flops("base", batch, SEQ, "pretrain")
        result["model_tflop_per_second"] = flops / seconds / 1e12
    return result


if __name__ == "__main__":
    sys.exit(main())
