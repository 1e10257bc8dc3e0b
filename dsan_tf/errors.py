"""The exception a user's mistake raises, anywhere in the library.

Library code raises `UsageError` (and `dsan_tf.data.DataError` for a bad data file) with
one sentence naming the configuration field, file or line to fix; only a program's `main`
turns it into an exit, without a traceback (`dsan_tf.programs.program`).
"""


class UsageError(Exception):
    """A mistake in how a program or function was called, described in one sentence.

    Args:
        message: the sentence.
        fields: the configuration fields it names (`dsan_tf.config`), as their names: a
            program shows each as the flag of the same name (`--batch_size`).
    """

    def __init__(self, message, fields=()):
        super().__init__(message)
        self.fields = tuple(fields)
