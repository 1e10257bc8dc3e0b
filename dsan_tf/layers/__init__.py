"""Keras layers of the DSAN model, one concept each, registered for `.keras` files."""

from dsan_tf.layers.attention import QKV_NORMS, MaskedMultiHeadAttention
from dsan_tf.layers.bag_of_words import BagOfWordsEncoder
from dsan_tf.layers.classifier import PairClassifier
from dsan_tf.layers.directional import DirectionalSelfAttention
from dsan_tf.layers.disan import DiSABlock, DiSANEncoder, MultiDimensionalTokenAttention
from dsan_tf.layers.distance_prior import PRIORS, Clip, DistancePrior
from dsan_tf.layers.encoder import POOLINGS, SentenceEncoder
from dsan_tf.layers.feed_forward import PositionwiseFeedForward
from dsan_tf.layers.fusion import FUSIONS, FusionGate
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.pooling import MaskedMaxPooling, Source2TokenAttention

__all__ = [
    "BagOfWordsEncoder", "Clip", "DiSABlock", "DiSANEncoder", "DirectionalSelfAttention",
    "DistancePrior", "FUSIONS", "FusionGate", "LayerNorm", "MaskedMaxPooling",
    "MaskedMultiHeadAttention", "MultiDimensionalTokenAttention", "PairClassifier", "POOLINGS",
    "PRIORS", "PositionwiseFeedForward", "QKV_NORMS", "SentenceEncoder", "Source2TokenAttention",
]
