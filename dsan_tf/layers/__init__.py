"""Keras layers of the models, one concept each, registered for `.keras` files."""

from dsan_tf.layers.afdmn import AttentionFusion, ComputationalBlock, CrossAttention
from dsan_tf.layers.attention import MaskedMultiHeadAttention
from dsan_tf.layers.bag_of_words import BagOfWordsEncoder
from dsan_tf.layers.disan import DiSABlock, DiSANEncoder, MultiDimensionalTokenAttention
from dsan_tf.layers.distance_prior import Clip, DistancePrior
from dsan_tf.layers.dsan_block import DSANBlock
from dsan_tf.layers.dsan_encoder import DSANEncoder
from dsan_tf.layers.feed_forward import PositionwiseFeedForward
from dsan_tf.layers.fusion import FusionGate
from dsan_tf.layers.gaussian_attention import GaussianAttentionSublayer
from dsan_tf.layers.gaussian_transformer import (
    GaussianEncodingBlock, GaussianTransformerEmbedding, InteractionBlock, SiameseAggregation)
from dsan_tf.layers.head import ClassificationHead, MatchingFeatures
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.pooling import MaskedMaxPooling, Source2TokenAttention

__all__ = [
    "AttentionFusion", "BagOfWordsEncoder", "ClassificationHead", "Clip", "ComputationalBlock",
    "CrossAttention", "DSANBlock", "DSANEncoder", "DiSABlock", "DiSANEncoder", "DistancePrior",
    "FusionGate", "GaussianAttentionSublayer", "GaussianEncodingBlock",
    "GaussianTransformerEmbedding", "InteractionBlock", "LayerNorm", "MaskedMaxPooling",
    "MaskedMultiHeadAttention", "MatchingFeatures", "MultiDimensionalTokenAttention",
    "PositionwiseFeedForward", "SiameseAggregation", "Source2TokenAttention",
]
