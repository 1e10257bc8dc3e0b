"""Files written whole or not at all, and the named points where a run or an export writes.

Every file of a run directory and of an export is written under a temporary name in its
own folder, flushed to disk, then renamed over its final name (`os.replace`, atomic on
POSIX): a reader, or a process that resumes after a kill, sees the old file or the new
one, never half of one. A rename replaces a symbolic link at the final name instead of
writing through it, so no write leaves the folder it names.

`WRITE_POINTS` lists, once, the points of the two write sequences (an epoch's commit,
`dsan_tf.training.run_state`; an export, `dsan_tf.saving.export`) in their order.
`write_point(name)` is called as each is reached: `set_fault_hook` lets a test stop the
process there (`tests/test_crash_safety.py` kills a run at every one of them).
"""

import contextlib
import os
import signal

# The write points of each sequence, in the order they are reached.
WRITE_POINTS = {
    # An epoch's end: the run's views of the epoch first, then the checkpoint in a
    # temporary folder, renamed into place (the commit), then older checkpoints pruned.
    "epoch": ("history", "tensorboard", "best", "checkpoint_weights", "checkpoint_files",
              "commit", "prune"),
    # An export: the model files and the SavedModel into a temporary folder, renamed to
    # the next free version (`publish`).
    "export": ("export_files", "export_savedmodel", "publish"),
}
_ALL = {point for points in WRITE_POINTS.values() for point in points}
_hook = None


def set_fault_hook(hook):
    """Calls `hook(point)` at every write point from now on (None: no more); returns the
    previous hook."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def kill_at(point, count=1):
    """A fault hook that sends this process SIGKILL when `point` is reached for the
    `count`-th time (as a crash, a power cut or `kill -9` would stop it)."""
    if point not in _ALL:
        raise ValueError(f"{point} is not a write point: {sorted(_ALL)}")
    seen = []

    def hook(reached):
        if reached == point:
            seen.append(reached)
            if len(seen) == count:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def write_point(name):
    """Marks that the write sequence reached `name` (one of `WRITE_POINTS`)."""
    assert name in _ALL, name
    if _hook is not None:
        _hook(name)


def temporary_name(path, suffix=""):
    """A name beside `path` for writing it: in the same folder (so that the rename is
    atomic), unique to this process, starting with "." and ending in ".partial" (or
    `suffix`, for writers that insist on an extension, as Keras' `.keras`)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}.partial{suffix}")


def fsync_path(path):
    """Flushes a file, or a folder's entries, to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def publish(partial, path):
    """Renames the complete file `partial` over `path`, flushed first; `partial` is
    removed where the rename fails."""
    try:
        fsync_path(partial)
        os.replace(partial, path)
    except BaseException:
        if os.path.lexists(partial):
            os.remove(partial)
        raise
    fsync_path(os.path.dirname(path) or ".")


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path, content):
    """Writes `content` to `path` atomically."""
    with stream(path, "wb") as out:
        out.write(content)


def write_with(path, save, suffix=""):
    """Writes `path` atomically with `save(temporary_path)`, for writers that take a path
    (Keras' `model.save`, NumPy's `savez`); `suffix` is the extension the writer needs."""
    partial = temporary_name(path, suffix)
    try:
        save(partial)
    except BaseException as error:
        if os.path.lexists(partial):
            os.remove(partial)
        _name_the_file(error, path)
        raise
    publish(partial, path)


@contextlib.contextmanager
def stream(path, mode="w", newline=None):
    """A stream (text: UTF-8; `mode="wb"`: bytes) whose content replaces `path` when the
    block succeeds; a failed block leaves `path` as it was and no partial file."""
    partial = temporary_name(path)
    encoding = None if "b" in mode else "utf-8"
    try:
        with open(partial, mode, encoding=encoding, newline=newline) as out:
            yield out
    except BaseException as error:
        if os.path.lexists(partial):
            os.remove(partial)
        _name_the_file(error, path)
        raise
    publish(partial, path)


def _name_the_file(error, path):
    """Names `path` in an `OSError` that names no file (a writer such as zipfile's reports
    a full disk without it), or the temporary file (the user knows the final name)."""
    if isinstance(error, OSError) and (not error.filename or ".partial" in str(error.filename)):
        error.filename = path


def copy_file(source, path):
    """Puts a copy of the file `source` at `path` atomically: its own bytes, never a link,
    so that damage to one of them (a file changed in place) leaves the other whole."""
    import shutil

    with stream(path, "wb") as out, open(source, "rb") as copied:
        shutil.copyfileobj(copied, out, 1 << 20)
