"""Writing outputs safely: beside their final place first, swapped in only when complete.

A reader (TF Serving watching a model folder, an app opening a `.tflite`, `kbc --resume`
opening a backup) never sees a half-written file or folder, and a killed writer leaves the
previous version in place.

Example:
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "answers.jsonl")
>>> with replaced_when_complete(path) as partial:
...     with open(partial, "w") as f:
...         _ = f.write("{}\\n")
...     os.path.exists(path)
False
>>> open(path).read()
'{}\\n'
"""

import contextlib
import os
import shutil
import uuid


def partial_path(path):
    """A hidden, unique name beside `path` for its content while it is written; it keeps the
    name's endings, which some writers check (`.keras`, `.weights.h5`)."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".partial-{uuid.uuid4().hex[:8]}.{name}")


def remove(path):
    """Removes a file, link or folder, if it exists."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def swap_in(partial, path):
    """Puts the complete file or folder `partial` at `path`, replacing what is there.

    A file replaces a file in one atomic rename. A folder cannot be renamed over a folder,
    so the old one is first renamed aside, then deleted once the new one is in place.
    """
    if os.path.isdir(partial) and os.path.isdir(path) and not os.path.islink(path):
        old = partial_path(path)
        os.rename(path, old)
        os.rename(partial, path)
        remove(old)
    else:
        os.replace(partial, path)


@contextlib.contextmanager
def replaced_when_complete(path):
    """Yields a temporary path beside `path` to write a file or folder into; when the block
    ends without error it takes `path`'s place (see `swap_in`), otherwise it is deleted and
    `path` is left as it was."""
    partial = partial_path(path)
    try:
        yield partial
    except BaseException:
        remove(partial)
        raise
    swap_in(partial, path)


def overlaps(output, inputs):
    """The first of `inputs` that `output` is, contains or lies inside (paths compared after
    resolving links), with how: `(input, "is" | "contains" | "is inside")`, else None."""
    out = os.path.realpath(output)
    for given in inputs:
        path = os.path.realpath(given)
        if out == path:
            return given, "is"
        if path.startswith(out.rstrip(os.sep) + os.sep):
            return given, "contains"
        if out.startswith(path.rstrip(os.sep) + os.sep):
            return given, "is inside"
    return None
