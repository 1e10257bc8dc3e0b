"""DiSAN (Shen et al. 2017), a baseline in DSAN's configuration: directional multi-dimensional
token2token self-attention, a fusion gate on the raw input, source2token pooling;
docs/FIDELITY.md#disan-token2token."""

from dsan_tf.models import flops
from dsan_tf.models.disan.config import DiSANConfig
from dsan_tf.models.registry import Family, lazy_attributes, register


def _backbone(config, vocabulary_size):
    """Its backbone, each field of `config` passed on under its one name (keras-hub's
    rule: the backbone's arguments are the configuration's fields)."""
    from dsan_tf.models.disan.backbone import DiSANBackbone

    return DiSANBackbone(vocabulary_size=vocabulary_size,
                         embedding_dim=config.embedding_dim, dropout=config.dropout,
                         layer_norm_epsilon=config.layer_norm_epsilon,
                         trainable_embeddings=config.trainable_embeddings)


def _head(config):
    """DSAN's classifier (Section 4.1), so that only the encoders differ."""
    return dict(hidden_units=config.classifier_units, dropout=config.dropout)


def _flops(config, premise_length, hypothesis_length):
    """Per block: the token map, W1, W2 and the gate's two (5 of 2·T·D²) and the weighted
    sum (2·T²·D); its [T, T, D] tanh is elementwise work left out, so its roofline
    fraction understates how busy the machine is."""
    d = config.embedding_dim

    def sentence(t):
        return 2 * (5 * 2 * t * d * d + 2 * t * t * d) + flops.source2token(d, t)
    return (sentence(premise_length) + sentence(hypothesis_length)
            + flops.sentence_classifier(config, 2 * d))


FAMILY = register(Family(
    name="disan", paper="Shen et al. (2017), DiSAN (a baseline in the DSAN setting)",
    config=DiSANConfig,
    backbone=_backbone, head=_head, forward_flops=_flops,
    modules=("dsan_tf.models.disan.layers", "dsan_tf.models.disan.backbone"),
    paper_parameters="2.4M", sentence_figures=True))

__getattr__ = lazy_attributes(__name__, {
    "DiSANBackbone": "backbone", "DiSANEncoder": "layers", "DiSABlock": "layers",
    "MultiDimensionalTokenAttention": "layers"})
