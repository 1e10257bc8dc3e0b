"""The Gaussian Transformer backbone (Guo, Zhang & Liu, 2019), a joint (pair-in) model.

Shape legend: B batch, T1 premise tokens, T2 hypothesis tokens, W frozen token features
(d_w + d_c), D model width (d_model), H heads, M encoding and N interaction blocks.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.models.gaussian_transformer.layers import (
    GaussianEncodingBlock, GaussianTransformerEmbedding, InteractionBlock, SiameseAggregation)
from dsan_tf.models.backbone import PairBackbone
from dsan_tf.models.config import field_defaults
from dsan_tf.models.gaussian_transformer.config import GaussianTransformerConfig

SIDES = ("premise", "hypothesis")


# The constructor's defaults are the configuration's (declared once, in GaussianTransformerConfig).
DEFAULTS = field_defaults(GaussianTransformerConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class GaussianTransformerBackbone(PairBackbone):
    """Token ids of both sentences -> [p̄ : h̄], the input of eq. (16).

    Embedding block (eq. (5)-(9)) -> M encoding blocks -> N interaction blocks ->
    aggregation (eq. (13)-(15)) of [x_i : x̃_i], x from the encoding blocks and x̃ from
    the interaction blocks. Premise and hypothesis share every weight; blocks at different
    depths do not (implementation paragraph).

    The frozen token embedding holds [x^(w) : x^(c)] per vocabulary word, W = d_w + d_c
    wide: the word vector and the max-pooled character 5-gram vector (eq. (6), from
    `dsan_tf.models.gaussian_transformer.char_ngrams`); both are fixed, so storing their concatenation is the
    same as concatenating them per token. `NLITask.build_model` fills it.

    Args:
        vocabulary_size: int, V.
        embedding_dim: d_w (the paper: 300), the word vectors' width (the token table is
            d_w + d_c wide: the character 5-gram vectors sit beside them).
        char_dim: d_c (30).
        model_dim: D (120).
        num_heads: H (4).
        num_encoder_blocks: M (3).
        num_interaction_blocks: N (2).
        ffn_dim: hidden width of each FFN (eq. (11): D).
        distance_prior: one of `PRIORS` for the self-attentions ("gaussian_variant":
            eq. (4), the paper's best, Table 1 (vii)).
        dropout: on every sub-layer's output and the embedding (0.1).
        layer_norm_epsilon: float.
        trainable_embeddings: bool (the paper: False).

    Call arguments:
        inputs: {"premise": int [B, T1], "hypothesis": int [B, T2]}, 0 padding.
        training: bool.

    Returns:
        float [B, 2D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.gaussian_transformer import GaussianTransformerBackbone

    backbone = GaussianTransformerBackbone(vocabulary_size=100, embedding_dim=8, char_dim=4,
                                           model_dim=8, num_heads=2)
    pair = {"premise": np.array([[4, 5, 6, 0]]), "hypothesis": np.array([[7, 8, 0, 0]])}
    features = backbone(pair)  # [1, 16]: [p̄ : h̄], 2 D
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 char_dim=DEFAULTS.char_dim, model_dim=DEFAULTS.model_dim,
                 num_heads=DEFAULTS.num_heads,
                 num_encoder_blocks=DEFAULTS.num_encoder_blocks,
                 num_interaction_blocks=DEFAULTS.num_interaction_blocks, ffn_dim=None,
                 distance_prior=DEFAULTS.distance_prior, dropout=DEFAULTS.dropout,
                 layer_norm_epsilon=DEFAULTS.layer_norm_epsilon, trainable_embeddings=False,
                 **kwargs):
        super().__init__(vocabulary_size, embedding_dim + char_dim, trainable_embeddings,
                         **kwargs)
        self.word_dim, self.char_dim = embedding_dim, char_dim
        self.model_dim, self.num_heads = model_dim, num_heads
        self.num_encoder_blocks = num_encoder_blocks
        self.num_interaction_blocks = num_interaction_blocks
        self.ffn_dim = ffn_dim or model_dim
        self.distance_prior = distance_prior
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self._make_token_embedding()
        common = dict(num_heads=num_heads, ffn_dim=self.ffn_dim, distance_prior=distance_prior,
                      dropout=dropout, layer_norm_epsilon=layer_norm_epsilon,
                      dtype=self.dtype_policy)
        self.embedding = GaussianTransformerEmbedding(
            model_dim, dropout=dropout, name="embedding_block", dtype=self.dtype_policy)
        self.encoding_blocks = [GaussianEncodingBlock(name=f"encoding_block_{i}", **common)
                                for i in range(num_encoder_blocks)]
        self.interaction_blocks = [InteractionBlock(name=f"interaction_block_{i}", **common)
                                   for i in range(num_interaction_blocks)]
        self.aggregation = SiameseAggregation(model_dim, name="aggregation",
                                              dtype=self.dtype_policy)

    def build(self, inputs_shape=None):
        # Built here in call order, not by Keras running `call` symbolically (whose
        # variables are placeholders that run their initializer at every read).
        states = (None, None, self.model_dim)
        self.token_embedding.build()
        self.embedding.build((None, None, self.word_dim + self.char_dim))
        for block in self.encoding_blocks:
            block.build(states)
        for block in self.interaction_blocks:
            block.build(states, states)
        self.aggregation.build(states, states)
        self.built = True

    @property
    def output_dim(self):
        return 2 * self.model_dim

    def call(self, inputs, training=None):
        return self.pair_intermediates(inputs, training=training)["features"]

    def pair_intermediates(self, inputs, training=False):
        """Every stage for a batch of pairs: {"features" [B, 2D], "premise_mask",
        "hypothesis_mask", "encoded"/"aligned": {side: [B, T, D]}, "attention": a list
        of {"block", "kind", "weights" [B, H, Tq, Tk]} in depth order}: the self-attention
        of each side in every block, and both inter-attention directions."""
        real = {side: masks.padding_mask(inputs[side]) for side in SIDES}
        states, attention = {}, []
        for side in SIDES:
            x = self.embedding(self.token_embedding(inputs[side]), training=training)
            for block in self.encoding_blocks:
                x, weights = block(x, real[side], training=training,
                                   return_attention_scores=True)
                attention.append({"block": block.name, "kind": f"{side}_self",
                                  "weights": weights})
            states[side] = x
        premise, hypothesis = states["premise"], states["hypothesis"]
        for block in self.interaction_blocks:
            premise, hypothesis, weights = block(
                premise, hypothesis, real["premise"], real["hypothesis"], training=training,
                return_attention_scores=True)
            attention += [{"block": block.name, "kind": kind, "weights": value}
                          for kind, value in weights.items()]
        aligned = {"premise": premise, "hypothesis": hypothesis}
        features = ops.concatenate(
            [self.aggregation(states[side], aligned[side], real[side]) for side in SIDES], -1)
        return {"features": features, "premise_mask": real["premise"],
                "hypothesis_mask": real["hypothesis"], "encoded": states,
                "aligned": aligned, "attention": attention}

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape["premise"][0], self.output_dim)

    def _parts(self):
        return [("embedding_block", self.embedding),
                *[(block.name, block) for block in self.encoding_blocks],
                *[(block.name, block) for block in self.interaction_blocks],
                ("aggregation", self.aggregation)]

    def get_config(self):
        config = super().get_config()
        # The constructor's embedding_dim is d_w; the table's width, d_w + d_c, follows.
        config.update(embedding_dim=self.word_dim, char_dim=self.char_dim,
                      model_dim=self.model_dim, num_heads=self.num_heads,
                      num_encoder_blocks=self.num_encoder_blocks,
                      num_interaction_blocks=self.num_interaction_blocks,
                      ffn_dim=self.ffn_dim, distance_prior=self.distance_prior,
                      dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon)
        return config

    @classmethod
    def from_config(cls, config):
        # `.keras` files saved before the constructor took the config's names.
        if "word_dim" in config:
            config = dict(config, embedding_dim=config["word_dim"])
            del config["word_dim"]
        return super().from_config(config)
