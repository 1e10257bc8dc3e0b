"""Keras layers that several model families share, one concept each, registered for
`.keras` files. A family's own layers live in its package (`dsan_tf.models.dsan`:
`MaskedMultiHeadAttention`, `DSANBlock`, `DSANEncoder`; `dsan_tf.models.disan`,
`dsan_tf.models.cbow`, `dsan_tf.models.gaussian_transformer`, `dsan_tf.models.afdmn`)."""

from dsan_tf.layers.distance_prior import Clip, DistancePrior
from dsan_tf.layers.feed_forward import PositionwiseFeedForward
from dsan_tf.layers.fusion import FusionGate
from dsan_tf.layers.head import ClassificationHead, MatchingFeatures, SplitPair, StackPair
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.pooling import MaskedMaxPooling, Source2TokenAttention

__all__ = [
    "ClassificationHead", "Clip", "DistancePrior", "FusionGate", "LayerNorm",
    "MaskedMaxPooling", "MatchingFeatures", "PositionwiseFeedForward", "SplitPair", "StackPair",
    "Source2TokenAttention",
]
