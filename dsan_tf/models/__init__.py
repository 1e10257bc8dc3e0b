"""Model families as backbones (`DSANBackbone`, `DiSANBackbone`, `CBOWBackbone`) and the
NLI task model on top of any of them (`NLIClassifier`). `build_model` makes one from a
`DSANConfig`."""

import numpy as np

from dsan_tf.config import MODELS, DSANConfig, check_model
from dsan_tf.models.afdmn import AFDMNBackbone
from dsan_tf.models.backbone import (
    AnalysisUnavailable, Backbone, PairBackbone, SentenceEncoderBackbone)
from dsan_tf.models.cbow import CBOWBackbone
from dsan_tf.models.disan import DiSANBackbone
from dsan_tf.models.dsan import DSANBackbone
from dsan_tf.models.gaussian_transformer import GaussianTransformerBackbone
from dsan_tf.models.nli_classifier import NLIClassifier

__all__ = ["AFDMNBackbone", "AnalysisUnavailable", "Backbone", "CBOWBackbone", "DSANBackbone", "DiSANBackbone",
           "GaussianTransformerBackbone", "MODELS", "NLIClassifier", "PairBackbone", "SentenceEncoderBackbone",
           "build_backbone", "build_model"]


def build_backbone(name, config, vocabulary_size):
    """The backbone of model family `name` (one of `MODELS`) with the hyperparameters of
    `config` (a `DSANConfig`) that apply to it."""
    common = dict(vocabulary_size=vocabulary_size, embedding_dim=config.embedding_dim,
                  trainable_embeddings=config.trainable_embeddings)
    if name == "dsan":
        return DSANBackbone(
            num_heads=config.num_heads, ffn_dim=config.ffn_dim,
            distance_prior=config.distance_prior, distance_alpha=config.distance_alpha,
            prior_max_distance=config.prior_max_distance,
            use_direction_mask=config.use_direction_mask, fusion=config.fusion,
            pooling=config.pooling, qkv_norm=config.qkv_norm, dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon, **common)
    if name == "disan":
        return DiSANBackbone(dropout=config.dropout,
                             layer_norm_epsilon=config.layer_norm_epsilon, **common)
    if name == "cbow":
        return CBOWBackbone(**common)
    if name == "gaussian_transformer":
        del common["embedding_dim"]
        return GaussianTransformerBackbone(
            word_dim=config.embedding_dim, char_dim=config.char_dim, model_dim=config.model_dim,
            num_heads=config.num_heads, num_encoder_blocks=config.num_encoder_blocks,
            num_interaction_blocks=config.num_interaction_blocks,
            distance_prior=config.distance_prior, dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon, **common)
    if name == "afdmn":
        return AFDMNBackbone(units=config.lstm_units, num_blocks=config.matching_blocks,
                             dropout=config.dropout, initialization=config.initialization,
                             init_scale=config.init_scale, **common)
    raise ValueError(f"model must be one of {MODELS}, got {name!r}.")


def _head(name, config):
    """The prediction layers each paper describes: DSAN's Section 4.1 (ReLU + LayerNorm,
    dropout after it); the Gaussian Transformer's eq. (16)-(17) (d_model-wide ReLU, no
    LayerNorm); AF-DMN's eq. (8) (tanh, dropout on "all MLPs": its input and hidden layer)."""
    if name == "gaussian_transformer":
        return dict(hidden_units=config.model_dim, dropout=config.dropout,
                    hidden_layer_norm=False)
    if name == "afdmn":
        return dict(hidden_units=config.lstm_units, dropout=config.dropout,
                    input_dropout=config.dropout, hidden_layer_norm=False,
                    hidden_activation="tanh")
    return dict(hidden_units=config.classifier_units, dropout=config.dropout)


def build_model(name="dsan", config=None, word_vectors=None):
    """An `NLIClassifier` on the backbone of family `name`.

    Args:
        name: one of `MODELS`.
        config: `DSANConfig`; the paper's hyperparameters when None. Its `vocab_size` may
            be None when `word_vectors` are given.
        word_vectors: optional float array [V, D] (row 0, padding, becomes zeros); without
            it the embeddings start random, U(-0.05, 0.05). The Gaussian Transformer takes
            [V, d_w + d_c]: word vectors and character 5-gram vectors side by side
            (`NLITask.build_model` makes them).

    Returns:
        `NLIClassifier` with int32 inputs {"premise": [B, T1], "hypothesis": [B, T2]} and
        float32 logits [B, C] in the order of `dsan_tf.labels.LABELS`.
    """
    config = config or DSANConfig.for_model(name)
    check_model(name, config)
    vocabulary_size = config.vocab_size
    joint = name == "gaussian_transformer"
    if word_vectors is not None:
        shape = np.shape(word_vectors)
        width = config.embedding_dim + (config.char_dim if joint else 0)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(f"word vectors have shape {shape}, expected [vocab_size, "
                             f"{width}] (embedding_dim{' + char_dim' if joint else ''}).")
        if vocabulary_size is not None and vocabulary_size != shape[0]:
            raise ValueError(f"vocab_size={vocabulary_size} but the word vectors have "
                             f"{shape[0]} rows.")
        vocabulary_size = shape[0]
    if vocabulary_size is None:
        raise ValueError("give DSANConfig.vocab_size or word vectors.")
    backbone = build_backbone(name, config, vocabulary_size)
    model = NLIClassifier(backbone, num_classes=config.num_classes,
                          layer_norm_epsilon=config.layer_norm_epsilon, name=name,
                          **_head(name, config))
    if word_vectors is not None:
        backbone.set_word_vectors(word_vectors)
    return model
