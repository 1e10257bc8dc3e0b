"""AF-DMN (Duan et al. 2018), a joint model: a BiLSTM encoder shared by both sentences, k
computational blocks (cross attention, fusion, self-attention, fusion), mean and max
pooling, a tanh MLP; docs/FIDELITY.md#afdmn."""

from dsan_tf.models.afdmn.config import AFDMNConfig
from dsan_tf.models.registry import Family, lazy_attributes, register


def _backbone(config, vocabulary_size):
    """Its backbone, each field of `config` passed on under its one name (keras-hub's
    rule: the backbone's arguments are the configuration's fields)."""
    from dsan_tf.models.afdmn.backbone import AFDMNBackbone

    return AFDMNBackbone(vocabulary_size=vocabulary_size,
                         embedding_dim=config.embedding_dim, lstm_units=config.lstm_units,
                         matching_blocks=config.matching_blocks, dropout=config.dropout,
                         initialization=config.initialization,
                         init_scale=config.init_scale,
                         trainable_embeddings=config.trainable_embeddings)


def _head(config):
    """Eq. (8): a tanh layer h wide; dropout on "all MLPs" (Section 5.2): its input and its
    hidden layer."""
    return dict(hidden_units=config.lstm_units, dropout=config.dropout,
                input_dropout=config.dropout, hidden_layer_norm=False,
                hidden_activation="tanh")


FAMILY = register(Family(
    name="afdmn", paper="Duan et al. (2018), Attention-Fused Deep Matching Network",
    config=AFDMNConfig,
    backbone=_backbone, head=_head, pair_input=True,
    modules=("dsan_tf.models.afdmn.layers", "dsan_tf.models.afdmn.backbone")))

__getattr__ = lazy_attributes(__name__, {
    "AFDMNBackbone": "backbone", "initializer": "backbone", "ESIMInitializer": "layers",
    "CrossAttention": "layers", "AttentionFusion": "layers",
    "ComputationalBlock": "layers", "bilstm": "layers"})
