"""Keras and TensorFlow loaded without their start-up C++ log lines (oneDNN, CUDA probing,
CPU features: about nine lines that TensorFlow writes to file descriptor 2 before its logger
honours TF_CPP_MIN_LOG_LEVEL), for programs and Python use alike: everything loads them
through `load_frameworks` (the programs, `dsan_tf`'s names, and every module of the package
through `dsan_tf.common.frameworks`). `DSAN_TF_VERBOSE=1` shows them. Plain Python:
importing this module loads neither.
"""

import contextlib
import os
import sys
import tempfile


@contextlib.contextmanager
def stderr_swallowed():
    """Sends file descriptor 2 to a temporary file while the block runs (C++ libraries
    write there directly, past Python's `sys.stderr`); replays it if the block raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode("utf-8", "replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def load_frameworks(tensorflow=None, verbose=None):
    """Imports Keras and, when it is the backend (or `tensorflow` is True), TensorFlow,
    without their start-up lines unless `verbose` (default: `DSAN_TF_VERBOSE` is set). A
    TF_CPP_MIN_LOG_LEVEL the user set is kept; otherwise TensorFlow's later C++ lines are
    shown from level 3 (fatal) on. Nothing happens once what it would import is loaded."""
    if verbose is None:
        verbose = bool(os.environ.get("DSAN_TF_VERBOSE"))
    if tensorflow is None:
        tensorflow = os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow"
    if "tensorflow" in sys.modules or (not tensorflow and "keras" in sys.modules):
        return
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with contextlib.nullcontext() if verbose else stderr_swallowed():
        import keras  # noqa: F401
        if tensorflow:
            import tensorflow  # noqa: F401


def tensorflow_importable():
    """Whether TensorFlow can be imported (it is loaded already where it is Keras' backend):
    what only it does (tokenizing text, TensorBoard's files, a SavedModel) is done. It
    loads without its start-up lines, as `load_frameworks` loads it."""
    if "tensorflow" in sys.modules:  # None: an import refused (a test's "not installed")
        return sys.modules["tensorflow"] is not None
    try:
        load_frameworks(tensorflow=True)
    except ImportError:
        return False
    return True
