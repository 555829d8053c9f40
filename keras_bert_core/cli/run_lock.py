"""The writer's lock a `kbc` command holds on each run folder it writes (`folder_lock`), from
before it replaces anything until the command ends: a second writer of the same run, with or
without `--overwrite`, is refused with a line naming the first; a lock left by a killed
command is taken over with a line that says so."""

import atexit
import contextlib
import os

from keras_bert_core.cli.messages import say
from keras_bert_core.folder_lock import FolderLock, describe

# The locks this process holds: real path of the folder -> (lock, the folders it made, the
# deepest first).
_held = {}
_command = [None]  # the command line of the command running, as locks name it


@contextlib.contextmanager
def command_writes(argv):
    """The block of one `kbc` command (`argv`: its arguments): the run locks it takes are
    released when it ends, however it ends (an error, Ctrl-C)."""
    _command[0] = " ".join(["kbc", *argv])
    try:
        yield
    finally:
        release_all()
        _command[0] = None


def lock_run(path):
    """Takes the writer's lock on the run folder `path`, creating the folder if there is none
    (it is removed again at release if nothing else was written into it). A lock this process
    holds already is kept."""
    key = os.path.realpath(path)
    if key in _held:
        return
    created = _missing_folders(path)
    os.makedirs(path, exist_ok=True)
    lock = FolderLock(path, _command[0])
    try:
        stale = lock.acquire()
    except BaseException:
        _remove_empty(created)
        raise
    if not _held:
        atexit.register(release_all)  # a library caller's locks, at exit at the latest
    _held[key] = (lock, created)
    if stale is not None:
        say(f"{path}: took over the lock of {describe(stale)}, which no longer runs")


def holds_lock(path):
    return os.path.realpath(path) in _held


def release_run(path):
    """Releases this process's lock on `path`, if it holds one."""
    held = _held.pop(os.path.realpath(path), None)
    if held is None:
        return
    lock, created = held
    lock.release()
    _remove_empty(created)


def _missing_folders(path):
    """`path` and those of its parents that do not exist yet, the deepest first."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.isdir(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _remove_empty(folders):
    """Removes `folders` (the deepest first) while they are empty: a command that wrote
    nothing leaves no `runs/` folder behind."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:  # not empty: the command wrote into it
            return


def release_all():
    for lock, _ in list(_held.values()):
        release_run(lock.folder)
