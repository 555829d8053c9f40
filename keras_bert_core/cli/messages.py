"""What `kbc` tells the user on stderr: notes, stages and progress bars (`say`, `stage`,
`progress`), `--quiet`, and TensorFlow's native log kept out of sight."""

import contextlib
import os
import sys
import time

from keras_bert_core.extras import require


@contextlib.contextmanager
def native_log_hidden():
    """Sends what native code writes to stderr (file descriptor 2) to a scratch file for the
    block, unless the user asked for TensorFlow's log (`--tf-logs`, TF_CPP_MIN_LOG_LEVEL=0);
    replayed if the block raises. TensorFlow 2.21's libraries log through absl as they load,
    before any level can be set, and LiteRT announces its XNNPACK delegate: neither obeys
    TF_CPP_MIN_LOG_LEVEL."""
    import tempfile

    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "0":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def load_tensorflow_quietly():
    """Imports TensorFlow with its load-time log hidden (`native_log_hidden`), and gives
    absl TF_CPP_MIN_LOG_LEVEL's level for what is logged later."""
    with native_log_hidden():
        apply_tf_log_level_to_absl()
        import tensorflow  # noqa: F401


def apply_tf_log_level_to_absl():
    """Gives TF_CPP_MIN_LOG_LEVEL's level to absl's C++ log too, which ignores it: XLA logs
    through absl (e.g. "Compiled cluster using XLA!" at the first compiled step, after a
    line saying absl's log is not initialized). Call it before TensorFlow loads: it loads
    TensorFlow's framework library alone (fast), whose absl keeps the level. Best effort:
    a TensorFlow whose library lacks the function keeps its log."""
    import ctypes
    import importlib.util
    import mmap
    import re

    try:
        level = min(max(int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")), 0), 3)
        spec = importlib.util.find_spec("tensorflow")
        library = os.path.join(spec.submodule_search_locations[0],
                               "libtensorflow_framework.so.2")
        # absl::SetMinLogLevel's name holds absl's release (absl::lts_20250127::...), which
        # changes with TensorFlow's: find it in the library's symbol names.
        with open(library, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            found = re.search(
                rb"_ZN4absl\d+lts_\d+14SetMinLogLevelENS0_18LogSeverityAtLeastE", m)
            name = found and found.group().decode()  # read before the map closes
        if not name:
            return
        set_min_log_level = getattr(ctypes.CDLL(library), name)
    except (ValueError, AttributeError, OSError):  # no such library or symbol
        return
    set_min_log_level.argtypes = [ctypes.c_int]
    set_min_log_level(level)  # absl's severities number as TensorFlow's: INFO 0 ... FATAL 3


class _Messages:
    quiet = False  # `--quiet`, set by `quiet_messages` while a command runs


@contextlib.contextmanager
def quiet_messages(quiet=True):
    """`--quiet`: while inside, `say`, `stage` and `progress` are silent, and so are Keras's
    progress bars and step logs, TensorFlow's Python warnings and Python's warnings. Errors
    (which `kbc` prints) and results (stdout) remain. Everything is restored on the way out.

    Example:
    >>> with quiet_messages():
    ...     say("not shown")
    """
    if not quiet:
        yield
        return
    import logging
    import warnings

    import keras

    tensorflow_logger = logging.getLogger("tensorflow")
    level, interactive = tensorflow_logger.level, keras.config.is_interactive_logging_enabled()
    # Without interactive logging Keras sends its progress bars and epoch lines to absl's
    # INFO log, which nothing shows.
    keras.config.disable_interactive_logging()
    tensorflow_logger.setLevel(logging.ERROR)
    _Messages.quiet = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        _Messages.quiet = False
        tensorflow_logger.setLevel(level)
        if interactive:
            keras.config.enable_interactive_logging()


def say(message):
    """Progress and notes go to stderr, so stdout carries only results; none under
    `--quiet`."""
    if not _Messages.quiet:
        print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def stage(title):
    """Announces a step whose progress cannot be measured, then says how long it took."""
    say(f"{title} ...")
    start = time.perf_counter()
    yield
    say(f"{title}: done in {time.perf_counter() - start:.1f} s")


def progress(items, title):
    """A progress bar on stderr around an iterable (tqdm, of the cli extra); none under
    `--quiet`."""
    tqdm = require("tqdm.auto", "kbc's progress bars")
    return tqdm.tqdm(items, desc=title, file=sys.stderr, leave=False, disable=_Messages.quiet)
