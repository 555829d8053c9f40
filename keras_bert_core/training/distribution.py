"""`distribution_strategy`: a `tf.distribute` strategy from a name, ready for `model.fit`.

Build the strategy first, then the model and its optimizer inside `strategy.scope()`, then
call `model.fit` as usual: Keras distributes the dataset itself, splitting every global batch
across the replicas, so each replica sees `global_batch / strategy.num_replicas_in_sync`
examples (`per_replica_batch_size`). Batch the dataset by the global batch size, with
`drop_remainder=True` so every step has the same static shapes.

XLA: Keras's `jit_compile="auto"` turns XLA off under any `tf.distribute` strategy (and on
CPU-only machines); ask for it with `model.compile(..., jit_compile=True)`. Under
`"one_device"` Keras then compiles the whole train step (`"tpu"` always compiles). With two or
more replicas Keras would compile `strategy.run` over all of them as one XLA cluster, which XLA
cannot place across devices (keras-team/keras#19005); the task models (`TaskModel`) compile
each replica's forward and backward pass instead and leave the all-reduce and the optimizer
outside XLA (`model.jit_compile_per_replica`). Keras also drops XLA, with a warning, while op
determinism is enabled (`TF_DETERMINISTIC_OPS=1`, `tf.config.experimental.enable_op_determinism()`).

Example:
>>> import keras_bert_core as kbc
>>> strategy = distribution_strategy("one_device")
>>> with strategy.scope():
...     encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
>>> per_replica_batch_size(32, strategy)
32
"""

import json
import os

import tensorflow as tf

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")

_TF_CONFIG_EXAMPLE = ('{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                      '"task": {"type": "worker", "index": 0}}')


class KerasMultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`tf.distribute.MultiWorkerMirroredStrategy` that Keras 3's `fit`/`evaluate` can drive.

    Keras 3 (through 3.15 at least) calls `strategy.reduce` in two ways that the plain
    strategy rejects as soon as there are two workers:

    - before the first step, `fit` "reduces" the whole first input batch, a nested
      `(features dict, labels)` structure, to learn its shapes (`_maybe_symbolic_build` in
      `keras/src/backend/tensorflow/trainer.py`) -- even when the model is already built --
      and `strategy.reduce` takes one tensor only (`ValueError: Attempt to convert a value
      ({'token_ids': PerReplica...}) ... to a Tensor`);
    - after every step it reduces each scalar metric with `axis=0`, which a scalar lacks.

    This strategy accepts both: nested values are reduced leaf by leaf, and a scalar is
    reduced across replicas (its only axis there is). Everything else is the parent's, so
    `isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)` holds and Keras treats
    it as one. `distribution_strategy("multi_worker")` returns one.

    Args: those of `tf.distribute.MultiWorkerMirroredStrategy` (`cluster_resolver`,
    `communication_options`).
    """

    def reduce(self, reduce_op, value, axis=None):
        parent_reduce = super().reduce

        def reduce_leaf(leaf):
            rank = self.experimental_local_results(leaf)[0].shape.rank
            return parent_reduce(reduce_op, leaf, axis=None if rank == 0 else axis)

        return tf.nest.map_structure(reduce_leaf, value)


def distribution_strategy(name=None, tpu_address=None, num_gpus=None, devices=None,
                          communication="auto"):
    """A `tf.distribute.Strategy` by name.

    Args:
        name: `None` or `"default"`: the current strategy (`tf.distribute.get_strategy()`,
            no distribution outside a scope); `"one_device"`: the first GPU, else the CPU;
            `"mirrored"`: synchronous data parallelism over this machine's GPUs (or
            `devices`); `"multi_worker"`: synchronous data parallelism over several machines,
            described by the `TF_CONFIG` environment variable (create it at program start,
            before any TensorFlow op runs); `"tpu"`: a Cloud TPU.
        tpu_address: for `"tpu"`: `"local"` on a TPU VM, a TPU name or a `grpc://` address;
            `None` reads `TPU_NAME` from the environment.
        num_gpus: for `"mirrored"`: use the first `num_gpus` GPUs (default: all of them).
        devices: for `"mirrored"`: explicit device names, e.g. `["/cpu:0", "/cpu:1"]`.
        communication: for `"multi_worker"`: the all-reduce implementation, `"auto"`,
            `"ring"` (gRPC) or `"nccl"` (GPUs).

    Returns:
        A `tf.distribute.Strategy`; `"multi_worker"` gives a
        `KerasMultiWorkerMirroredStrategy`.

    Example:
    >>> strategy = distribution_strategy("mirrored", devices=["/cpu:0"])
    >>> strategy.num_replicas_in_sync
    1
    """
    name = name or "default"
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
        return tf.distribute.OneDeviceStrategy(device)
    if name == "mirrored":
        if devices is None and num_gpus is not None:
            available = len(tf.config.list_logical_devices("GPU"))
            if num_gpus > available:
                raise ValueError(f"num_gpus={num_gpus} but only {available} GPU(s) are visible")
            devices = [f"/gpu:{index}" for index in range(num_gpus)] or ["/cpu:0"]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        return _multi_worker_strategy(communication)
    if name == "tpu":
        return _tpu_strategy(tpu_address)
    raise ValueError(f"Unknown distribution strategy {name!r}; choose from {STRATEGIES}")


def worker_role(strategy=None):
    """`(is_chief, task)` of this process in `strategy`'s cluster.

    `task` names the process as `"<type>_<index>"` (`"worker_1"`) under a multi-worker
    strategy with a cluster, else None. The chief is the `chief` task, else worker 0 when the
    cluster names no chief (TensorFlow's convention); the one process of any other strategy
    (TPUStrategy included) is the chief. Only the chief should write a run's shared files.

    Args:
        strategy: the strategy; default: the current one.

    Example:
    >>> worker_role(distribution_strategy("one_device"))
    (True, None)
    """
    strategy = strategy or tf.distribute.get_strategy()
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True, None
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec().as_dict()
    if not cluster or resolver.task_type is None:
        return True, None
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    is_chief = task_type == "chief" or (
        task_type == "worker" and task_id == 0 and "chief" not in cluster)
    return is_chief, f"{task_type}_{task_id}"


def per_replica_batch_size(global_batch_size, strategy=None):
    """The examples each replica gets per step when `fit` splits a global batch.

    Args:
        global_batch_size: the batch size the dataset is batched by.
        strategy: the strategy; default: the current one.

    Raises:
        ValueError: if the global batch does not split evenly across the replicas (uneven
            replica batches would change shapes between replicas and break static shapes).

    Example:
    >>> per_replica_batch_size(64, distribution_strategy("mirrored", devices=["/cpu:0"]))
    64
    """
    replicas = (strategy or tf.distribute.get_strategy()).num_replicas_in_sync
    if global_batch_size % replicas:
        raise ValueError(f"global batch size {global_batch_size} does not divide evenly "
                         f"across {replicas} replicas; use a multiple of {replicas}")
    return global_batch_size // replicas


def _check_tf_config():
    """Parses `TF_CONFIG` and names what is wrong with it."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ValueError("The 'multi_worker' strategy needs the TF_CONFIG environment variable "
                         f"describing the cluster and this task, e.g. {_TF_CONFIG_EXAMPLE}")
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}); expected e.g. "
                         f"{_TF_CONFIG_EXAMPLE}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not (cluster.get("worker") or cluster.get("chief")):
        raise ValueError(f"TF_CONFIG has no 'cluster' with 'worker' (or 'chief') addresses: "
                         f"{raw}; expected e.g. {_TF_CONFIG_EXAMPLE}")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise ValueError(f"TF_CONFIG has no 'task' with 'type' and 'index': {raw}")
    hosts = cluster.get(task["type"])
    if not isinstance(hosts, list) or not 0 <= task["index"] < len(hosts):
        raise ValueError(f"TF_CONFIG task {task} is not in its cluster {cluster}")


def _multi_worker_strategy(communication):
    _check_tf_config()
    implementations = {
        "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
    }
    if communication not in implementations:
        raise ValueError(f"communication must be one of {sorted(implementations)}, "
                         f"got {communication!r}")
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=implementations[communication])
    try:
        return KerasMultiWorkerMirroredStrategy(communication_options=options)
    except RuntimeError as e:
        raise RuntimeError(f"Could not create the 'multi_worker' strategy ({e}). Create it at "
                           "the start of the program, before any TensorFlow op runs.") from None


def _tpu_strategy(tpu_address):
    where = repr(tpu_address) if tpu_address else f"TPU_NAME={os.environ.get('TPU_NAME')!r}"
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RuntimeError(
            f"No TPU reachable at {where}: {first_line}. On a Cloud TPU VM pass "
            "tpu_address='local' (kbc: --tpu-address local); for a TPU node, its name or "
            "'grpc://IP:8470'.") from None
    return tf.distribute.TPUStrategy(resolver)
