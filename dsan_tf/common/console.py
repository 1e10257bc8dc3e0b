"""A run's console kept in its run directory: what `train_run` prints (its lines, the
progress lines and the final one) goes to the terminal and, appended, to WORKDIR/train.log,
so a run launched without `tee` (a Ray trial, a scheduler's job) keeps its story. Each
start adds a heading line; an interrupt or an error adds the line it ended with.

A terminal's redrawn progress bar (text holding a carriage return) stays on the terminal.
Where the log cannot be written (a full disk) the run goes on, and says so once.
"""

import contextlib
import datetime
import os
import socket
import sys


class _Log:
    """The open log file, written until a write fails (then closed, said once)."""

    def __init__(self, path, stream):
        self.path, self._stream = path, stream
        self._file = open(path, "a", encoding="utf-8", buffering=1)

    def write(self, text):
        if self._file is None:
            return
        try:
            self._file.write(text)
        except OSError as error:  # the run's own files say it soon, if it matters
            self.close()
            self._stream.write(f"\nnote: {self.path}: {error.strerror or error}; the "
                               "console is no longer kept there.\n")

    def close(self):
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


class _Tee:
    """A text stream that writes to `stream` and to `log` (a `_Log`)."""

    def __init__(self, stream, log):
        self._stream, self._log = stream, log

    def write(self, text):
        written = self._stream.write(text)
        if "\r" not in text:  # a redrawn progress bar stays on the terminal
            self._log.write(text)
        return written

    def flush(self):
        self._stream.flush()

    def __getattr__(self, name):  # isatty, fileno, encoding: the terminal's
        return getattr(self._stream, name)


@contextlib.contextmanager
def kept_in(path):
    """While the block runs, `sys.stdout` and `sys.stderr` also append to `path` (line
    by line, so a killed process loses no line it printed)."""
    log = _Log(path, sys.stderr)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    log.write(f"== started {started} UTC on {socket.gethostname()}, process {os.getpid()}\n")
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, log), _Tee(err, log)
    try:
        yield
    except KeyboardInterrupt:
        log.write("== interrupted (Ctrl-C)\n")
        raise
    except BaseException as error:
        log.write(f"== ended by {type(error).__name__}: {' '.join(str(error).split())}\n")
        raise
    finally:
        sys.stdout, sys.stderr = out, err
        log.close()
