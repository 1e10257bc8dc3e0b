"""dsan_tf: Distance-based Self-Attention Network (Im & Cho, 2017) in TensorFlow 2 / Keras 3."""

from dsan_tf import layers, masks
from dsan_tf.config import DSANConfig
from dsan_tf.labels import LABEL_IDS, LABELS
from dsan_tf.model import (MODELS, build_cbow, build_disan, build_dsan, build_model,
                           compile_for_training, parameter_breakdown)

__version__ = "0.1.0"

__all__ = ["DSANConfig", "LABELS", "LABEL_IDS", "MODELS", "build_cbow", "build_disan", "build_dsan",
           "build_model", "compile_for_training", "layers", "masks", "parameter_breakdown"]
