"""Keras and TensorFlow loaded without their start-up C++ log lines (oneDNN, CUDA probing,
CPU features: about nine lines that TensorFlow writes to file descriptor 2 before its logger
honours TF_CPP_MIN_LOG_LEVEL) and TensorFlow's false alarm of retracing about Keras' step
functions (`hush_keras_step_retracing`), for programs and Python use alike: everything loads
them through `load_frameworks` (the programs, `dsan_tf`'s names, and every module of the
package through `dsan_tf.common.frameworks`). `DSAN_TF_VERBOSE=1` shows them. Plain Python:
importing this module loads neither.
"""

import contextlib
import logging
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


class _KerasStepRetracing:
    """A `logging` filter that drops TensorFlow's "triggered tf.function retracing" warning
    about Keras' own step functions (`TensorFlowTrainer.make_train_function`,
    `make_test_function`, `make_predict_function`). TensorFlow counts traces by a
    function's code, so every Keras model's predict step counts as one function: a process
    holding a task model, its backbone (`encode`) and an ensemble crossed its threshold of 5
    traces with each model tracing 2 to 4 shapes (`reduce_retracing`), and the warning
    named no fault. Any other function's warning passes."""

    def filter(self, record):
        text = record.getMessage()
        return not ("triggered tf.function retracing" in text
                    and "TensorFlowTrainer.make_" in text)


def hush_keras_step_retracing():
    """Puts `_KerasStepRetracing` on TensorFlow's Python logger (imports nothing; once)."""
    logger = logging.getLogger("tensorflow")
    if not any(isinstance(f, _KerasStepRetracing) for f in logger.filters):
        logger.addFilter(_KerasStepRetracing())


def load_frameworks(tensorflow=None, verbose=None):
    """Imports Keras and, when it is the backend (or `tensorflow` is True), TensorFlow,
    without their start-up lines unless `verbose` (default: `DSAN_TF_VERBOSE` is set). A
    TF_CPP_MIN_LOG_LEVEL the user set is kept; otherwise TensorFlow's later C++ lines are
    shown from level 3 (fatal) on. Nothing happens once what it would import is loaded."""
    if verbose is None:
        verbose = bool(os.environ.get("DSAN_TF_VERBOSE"))
    if not verbose:
        hush_keras_step_retracing()
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
