"""The Gaussian Transformer (Guo, Zhang & Liu 2019), a joint model: fixed character 5-gram
vectors beside the word vectors, Gaussian self-attention encoding blocks, interaction
blocks with inter-attention, Siamese aggregation; docs/FIDELITY.md#gaussian-transformer."""

from dsan_tf.models.gaussian_transformer.config import GaussianTransformerConfig
from dsan_tf.models.registry import Family, lazy_attributes, register


def _backbone(config, vocabulary_size):
    """Its backbone, each field of `config` passed on under its one name (keras-hub's
    rule: the backbone's arguments are the configuration's fields)."""
    from dsan_tf.models.gaussian_transformer.backbone import GaussianTransformerBackbone

    return GaussianTransformerBackbone(vocabulary_size=vocabulary_size,
                                       embedding_dim=config.embedding_dim,
                                       char_dim=config.char_dim,
                                       model_dim=config.model_dim,
                                       num_heads=config.num_heads,
                                       num_encoder_blocks=config.num_encoder_blocks,
                                       num_interaction_blocks=config.num_interaction_blocks,
                                       distance_prior=config.distance_prior,
                                       dropout=config.dropout,
                                       layer_norm_epsilon=config.layer_norm_epsilon,
                                       trainable_embeddings=config.trainable_embeddings)


def _head(config):
    """Eq. (16)-(17): a d_model-wide ReLU layer, no LayerNorm."""
    return dict(hidden_units=config.model_dim, dropout=config.dropout,
                hidden_layer_norm=False)


def _token_features(config, vocabulary, word_vectors, seed):
    """[x^(w) : x^(c)] for every id of `vocabulary` (eq. (5)-(6)): float32 [V, d_w + d_c];
    without word vectors (the synthetic benchmarks) they start U(-0.05, 0.05)."""
    import numpy as np

    from dsan_tf.models.gaussian_transformer.char_ngrams import char_ngram_vectors

    if word_vectors is None:
        word_vectors = np.random.default_rng(seed).uniform(
            -0.05, 0.05, (len(vocabulary), config.embedding_dim)).astype("float32")
    chars = char_ngram_vectors(vocabulary.words, config.char_dim,
                               first_id=vocabulary.FIRST_WORD_ID, seed=seed)
    return np.concatenate([np.asarray(word_vectors, "float32"), chars], axis=1)


FAMILY = register(Family(
    name="gaussian_transformer", paper="Guo, Zhang & Liu (2019), Gaussian Transformer",
    config=GaussianTransformerConfig,
    backbone=_backbone, head=_head, pair_input=True,
    feature_width=lambda config: config.embedding_dim + config.char_dim,
    token_features=_token_features,
    modules=tuple(f"dsan_tf.models.gaussian_transformer.{m}"
                  for m in ("attention", "layers", "backbone"))))

__getattr__ = lazy_attributes(__name__, {
    "GaussianTransformerBackbone": "backbone", "GaussianAttentionSublayer": "attention",
    "GaussianEncodingBlock": "layers", "GaussianTransformerEmbedding": "layers",
    "InteractionBlock": "layers", "SiameseAggregation": "layers",
    "char_ngram_vectors": "char_ngrams"})
