"""The exception a user's mistake raises, anywhere in the library.

Library code raises `UsageError` (and `dsan_tf.data.DataError` for a bad data file) with
one sentence naming the flag, file or line to fix; only a program's `main` turns it into an
exit, without a traceback (`dsan_tf.programs.program`).
"""


class UsageError(Exception):
    """A mistake in how a program or function was called, described in one sentence."""
