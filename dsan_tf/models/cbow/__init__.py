"""CBOW: the mean of a sentence's word vectors, with DSAN's classifier (a baseline)."""

from dsan_tf.models import flops
from dsan_tf.models.cbow.config import CBOWConfig
from dsan_tf.models.registry import Family, lazy_attributes, register


def _backbone(config, vocabulary_size):
    """Its backbone, each field of `config` passed on under its one name (keras-hub's
    rule: the backbone's arguments are the configuration's fields)."""
    from dsan_tf.models.cbow.backbone import CBOWBackbone

    return CBOWBackbone(vocabulary_size=vocabulary_size,
                        embedding_dim=config.embedding_dim,
                        trainable_embeddings=config.trainable_embeddings)


def _head(config):
    """DSAN's classifier (Section 4.1)."""
    return dict(hidden_units=config.classifier_units, dropout=config.dropout)


def _flops(config, premise_length, hypothesis_length):
    """The classifier only: averaging is no matrix product."""
    return flops.sentence_classifier(config, config.embedding_dim)


FAMILY = register(Family(
    name="cbow", paper="a bag-of-words baseline",
    config=CBOWConfig, backbone=_backbone, head=_head,
    forward_flops=_flops,
    modules=("dsan_tf.models.cbow.bag_of_words", "dsan_tf.models.cbow.backbone")))

__getattr__ = lazy_attributes(__name__, {"CBOWBackbone": "backbone",
                                         "BagOfWordsEncoder": "bag_of_words"})
