"""dsan_tf: Distance-based Self-Attention Network (Im & Cho, 2017) in TensorFlow 2 / Keras 3."""

from dsan_tf import layers, masks
from dsan_tf.config import DSANConfig
from dsan_tf.labels import LABEL_IDS, LABELS
from dsan_tf.model import build_dsan, parameter_breakdown

__version__ = "0.1.0"

__all__ = ["DSANConfig", "LABELS", "LABEL_IDS", "build_dsan", "layers", "masks",
           "parameter_breakdown"]
