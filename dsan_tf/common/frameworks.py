"""Keras, its ops and TensorFlow as the package's modules import them, loaded the first time
without their C++ start-up lines (`quiet.load_frameworks`: oneDNN, CUDA probing, CPU
features), so that Python use is as quiet as the programs whichever module is imported
first. `DSAN_TF_VERBOSE=1` shows the lines.

    from dsan_tf.common.frameworks import keras, ops
    from dsan_tf.common.frameworks import tf  # TensorFlow, on any Keras backend
"""

from dsan_tf.common import quiet

quiet.load_frameworks()

import keras  # noqa: E402  (after the line above: loaded quietly)
from keras import ops  # noqa: E402


def __getattr__(name):
    """`tf`: TensorFlow, loaded quietly at its first use (strings, tf.data, TensorBoard and
    SavedModels are TensorFlow's whatever the Keras backend)."""
    if name == "tf":
        quiet.load_frameworks(tensorflow=True)
        import tensorflow

        return tensorflow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
