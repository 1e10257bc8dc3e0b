"""The exception a user's mistake raises, anywhere in the library.

Library code raises `UsageError` (and `dsan_tf.data.DataError` for a bad data file) with
one sentence naming the configuration field, file or line to fix; only a program's `main`
turns it into an exit, without a traceback (`dsan_tf.programs.program`).
"""


class UsageError(Exception):
    """A mistake in how a program or function was called, described in one sentence.

    Args:
        message: the sentence.
        fields: the configuration fields it names (`dsan_tf.core.config`), as their names: a
            program shows each as the flag of the same name (`--batch_size`).
    """

    def __init__(self, message, fields=()):
        super().__init__(message)
        self.fields = tuple(fields)


def require_tensorflow_backend(what):
    """Raises `UsageError` unless Keras runs on TensorFlow: `what` (e.g. "export_dir")
    writes a SavedModel, which only TensorFlow's Keras can trace. Called before any work,
    so that a run on JAX is refused before it trains, not after."""
    import keras  # loaded already by whoever asks (common imports no other module)

    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise UsageError(
            f"{what} writes a TensorFlow SavedModel, which needs KERAS_BACKEND=tensorflow "
            f"(now {backend}); a model trained on any backend exports from its run "
            "directory with KERAS_BACKEND=tensorflow dsan-export "
            "--workdir=RUN --export_dir=DIR.", fields=("export_dir",) if what ==
            "export_dir" else ())
