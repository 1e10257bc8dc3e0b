"""DSAN (Im & Cho 2017): the sentence encoder of a forward and a backward block (masked
multi-head attention with a distance prior, fusion gate, FFN), source2token and max
pooling; docs/FIDELITY.md#model, #data and #training and, for SAN4NLI's
departures, #san4nli."""

from dsan_tf.models import flops
from dsan_tf.models.dsan.config import DSANConfig
from dsan_tf.models.registry import Family, lazy_attributes, register


def _backbone(config, vocabulary_size):
    """Its backbone, each field of `config` passed on under its one name (keras-hub's
    rule: the backbone's arguments are the configuration's fields)."""
    from dsan_tf.models.dsan.backbone import DSANBackbone

    return DSANBackbone(vocabulary_size=vocabulary_size,
                        embedding_dim=config.embedding_dim, num_heads=config.num_heads,
                        ffn_dim=config.ffn_dim, distance_prior=config.distance_prior,
                        distance_alpha=config.distance_alpha,
                        prior_max_distance=config.prior_max_distance,
                        use_direction_mask=config.use_direction_mask, fusion=config.fusion,
                        pooling=config.pooling, qkv_norm=config.qkv_norm,
                        dropout=config.dropout,
                        layer_norm_epsilon=config.layer_norm_epsilon,
                        trainable_embeddings=config.trainable_embeddings,
                        attention_scale=config.attention_scale,
                        fusion_norm=config.fusion_norm,
                        fusion_output_norm=config.fusion_output_norm,
                        ffn_dropout=config.ffn_dropout, s2t_norm=config.s2t_norm,
                        max_pool_padding=config.max_pool_padding,
                        initialization=config.initialization)


def _head(config):
    """Section 4.1: a ReLU layer with LayerNorm, dropout after it (and, SAN4NLI's, on its
    input features)."""
    return dict(hidden_units=config.classifier_units, dropout=config.dropout,
                input_dropout=config.dropout if config.classifier_input_dropout else 0.0,
                initialization=config.initialization)


def _flops(config, premise_length, hypothesis_length):
    """Per sentence of T tokens and per block: Q, K, V, W^O and the gate's W^S, W^H (6 of
    2·T·D²), QKᵀ and the weighted sum of V (2 of 2·T²·D over all heads), the FFN (2 of
    2·T·D·F); source2token; the classifier."""
    d, f = config.embedding_dim, config.ffn_dim
    width = {"multi_dim_max": 4, "multi_dim": 2, "max": 2}[config.pooling] * d

    def sentence(t):
        block = 6 * 2 * t * d * d + 2 * 2 * t * t * d + 2 * 2 * t * d * f
        return 2 * block + (flops.source2token(d, t) if config.pooling != "max" else 0)
    return (sentence(premise_length) + sentence(hypothesis_length)
            + flops.sentence_classifier(config, width))


FAMILY = register(Family(
    name="dsan", paper="Im & Cho (2017), Distance-based Self-Attention Network for NLI",
    config=DSANConfig,
    backbone=_backbone, head=_head, forward_flops=_flops,
    modules=tuple(f"dsan_tf.models.dsan.{m}" for m in ("attention", "block",
                                                       "backbone")),
    paper_parameters="4.7M", sentence_figures=True))


__getattr__ = lazy_attributes(__name__, {
    "DSANBackbone": "backbone", "DSANBlock": "block", "DSANEncoder": "backbone",
    "MaskedMultiHeadAttention": "attention"})
