"""One writer per folder: a lock file in the folder, created atomically, that names its holder
(process id, host, command, start time), so that a second writer can be refused with a line
that says who writes, and a lock left by a killed process can be told apart and taken over."""

import contextlib
import datetime
import json
import os
import shlex
import socket
import sys
import uuid

from keras_bert_core.errors import FolderLockedError

LOCK_FILE = "writer.lock"


def _process_start(pid):
    """`(state, start time)` of process `pid` from /proc (Linux), or None where there is none.
    The start time tells a live process from a later one given the same id."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]  # stat's fields 3 and 22


def holder_state(record):
    """"live" or "dead" for the holder `record` of a lock taken on this host; "unknown" for
    one taken on another host (its processes cannot be seen from here) or a lock file that
    cannot be read (`record` None)."""
    if not record or record.get("host") != socket.gethostname():
        return "unknown"
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return "unknown"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except PermissionError:  # alive, another user's
        pass
    now = _process_start(pid)
    if now is not None and (now[0] == "Z" or
                            record.get("process_start") not in (None, now[1])):
        return "dead"  # a zombie, or the id now names another process
    return "live"


def describe(record):
    """The holder `record` of a lock in words: pid, host, start time and command."""
    if not record:
        return "an unknown writer (its lock file cannot be read)"
    return (f"pid {record.get('pid')} on {record.get('host')} since {record.get('started')} "
            f"({record.get('command')})")


def read_lock(folder):
    """The record of the lock on `folder` (a dict), {} where its file cannot be read, or
    None where there is no lock."""
    try:
        with open(os.path.join(folder, LOCK_FILE), encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def other_writer(folder):
    """The writer of `folder` in words (`describe`) while another process than this one
    holds its lock and is not known to be dead; else None. For readers, whose message
    about a folder that is not complete depends on whether it is being written."""
    record = read_lock(folder)
    if record is None or holder_state(record) == "dead":
        return None
    if record.get("pid") == os.getpid() and record.get("host") == socket.gethostname():
        return None
    return describe(record)


class FolderLock:
    """The lock of one writer on `folder`: the file `writer.lock` in it, made with
    O_CREAT | O_EXCL, so that of two writers exactly one makes it.

    Args:
        folder: an existing folder.
        command: the command that writes, as its holder names it (default: this process's
            command line).

    Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> lock = FolderLock(folder, "kbc finetune")
    >>> lock.acquire()  # None: no stale lock was taken over
    >>> try:
    ...     FolderLock(folder, "kbc export").acquire()
    ... except FolderLockedError as e:
    ...     print("refused:", "is being written by pid" in str(e))
    refused: True
    >>> lock.release()
    >>> read_lock(folder) is None
    True
    """

    def __init__(self, folder, command=None):
        self.folder = folder
        self.path = os.path.join(folder, LOCK_FILE)
        pid = os.getpid()
        start = _process_start(pid)
        self.record = {
            "pid": pid, "host": socket.gethostname(),
            "command": " ".join((command or shlex.join(sys.argv)).split()),  # one line
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "process_start": start[1] if start else None}
        self.held = False

    def acquire(self):
        """Takes the lock. A lock of a live writer, or of one that cannot be told dead (on
        another host), raises `FolderLockedError`; a dead one's is taken over, and its record
        returned (else None)."""
        stale = None
        for _ in range(5):  # other writers may take over the same stale lock meanwhile
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                record = read_lock(self.folder)
                state = holder_state(record)
                if record is None:  # released meanwhile
                    continue
                if state != "dead":
                    raise FolderLockedError(self._refusal(record, state)) from None
                if self._set_aside(record):
                    stale = record
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.record, f)
            self.held = True
            return stale
        raise FolderLockedError(f"{self.folder}: could not take its lock {self.path}; "
                                "other commands keep taking it")

    def _set_aside(self, record):
        """Removes the stale lock whose holder is `record`: renamed aside first, and put back
        if it turns out to be another writer's, who took it over in between."""
        aside = os.path.join(self.folder, f".{LOCK_FILE}.stale-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return False
        with open(aside, encoding="utf-8", errors="replace") as f:
            moved = f.read()
        try:
            same = json.loads(moved) == record
        except ValueError:
            same = False
        try:
            if not same:
                with contextlib.suppress(OSError):
                    os.link(aside, self.path)
        finally:
            os.remove(aside)
        return same

    def _refusal(self, record, state):
        if state == "live":
            return (f"{self.folder} is being written by {describe(record)}; wait for it to "
                    "end, or stop it")
        return (f"{self.folder} is locked by {describe(record)}, which cannot be checked from "
                f"here; if that command no longer runs, delete {self.path}")

    def release(self):
        """Removes the lock file if it is still this writer's."""
        if self.held and read_lock(self.folder) == self.record:
            os.remove(self.path)
        self.held = False
