"""The DSAN backbone (Im & Cho, 2017, Section 4.2, Figure 2): word embedding -> forward
and backward DSAN blocks -> source2token attention and max pooling -> sentence vector.

Shape legend: B batch, T tokens, D word width (d_e), E sentence-vector width (4·d_e).
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.layers import masks
from dsan_tf.models.backbone import SentenceEncoderBackbone
from dsan_tf.models.config import field_defaults
from dsan_tf.models.dsan.config import DSANConfig
from dsan_tf.models.dsan.encoder import DSANEncoder


# The constructor's defaults are the configuration's (declared once, in DSANConfig).
DEFAULTS = field_defaults(DSANConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class DSANBackbone(SentenceEncoderBackbone):
    """DSAN's sentence encoder with its word embedding; defaults are the paper's
    (Section 5.2: d_e 300, h 5, α 1.5, dropout 0.1; Section 4.2.4: d_ff = 4·d_e).

    Args:
        vocabulary_size: int, V.
        embedding_dim: d_e (300).
        num_heads: h (5).
        ffn_dim: d_ff (1200).
        distance_prior, distance_alpha, prior_max_distance, use_direction_mask, fusion,
            pooling, qkv_norm, dropout, layer_norm_epsilon: see `dsan_tf.DSANConfig`.
        attention_scale, fusion_norm, fusion_output_norm, ffn_dropout, s2t_norm,
            max_pool_padding, initialization: SAN4NLI-pytorch's departures, off by
            default (`dsan_tf.DSANConfig`, docs/FIDELITY.md#san4nli).
        trainable_embeddings: bool (False: the paper's frozen GloVe).

    Call arguments:
        token_ids: int [B, T], 0 padding.
        training: bool.

    Returns:
        float [B, E], E = 4·d_e with the paper's pooling.

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.dsan import DSANBackbone

    backbone = DSANBackbone(vocabulary_size=100, embedding_dim=8, num_heads=2, ffn_dim=16)
    vectors = backbone(np.array([[4, 5, 6, 0]]))  # [1, 32]: 4 d_e a sentence
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 num_heads=DEFAULTS.num_heads, ffn_dim=DEFAULTS.ffn_dim,
                 distance_prior=DEFAULTS.distance_prior,
                 distance_alpha=DEFAULTS.distance_alpha,
                 prior_max_distance=DEFAULTS.prior_max_distance,
                 use_direction_mask=DEFAULTS.use_direction_mask, fusion=DEFAULTS.fusion,
                 pooling=DEFAULTS.pooling, qkv_norm=DEFAULTS.qkv_norm,
                 dropout=DEFAULTS.dropout, layer_norm_epsilon=DEFAULTS.layer_norm_epsilon,
                 trainable_embeddings=False, attention_scale=DEFAULTS.attention_scale,
                 fusion_norm=DEFAULTS.fusion_norm,
                 fusion_output_norm=DEFAULTS.fusion_output_norm,
                 ffn_dropout=DEFAULTS.ffn_dropout, s2t_norm=DEFAULTS.s2t_norm,
                 max_pool_padding=DEFAULTS.max_pool_padding,
                 initialization=DEFAULTS.initialization, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self.encoder_config = dict(
            num_heads=num_heads, ffn_dim=ffn_dim, distance_prior=distance_prior,
            distance_alpha=distance_alpha, prior_max_distance=prior_max_distance,
            use_direction_mask=use_direction_mask, fusion=fusion, pooling=pooling,
            qkv_norm=qkv_norm, dropout=dropout, layer_norm_epsilon=layer_norm_epsilon,
            attention_scale=attention_scale, fusion_norm=fusion_norm,
            fusion_output_norm=fusion_output_norm, ffn_dropout=ffn_dropout,
            s2t_norm=s2t_norm, max_pool_padding=max_pool_padding,
            initialization=initialization)
        # The encoder is made before the embedding, and both before the task's head: an
        # unseeded initializer takes its seed from Python's random state when it is made,
        # so this order is what makes a seed reproduce the runs of earlier versions.
        self.encoder = DSANEncoder(name="dsan_encoder", dtype=self.dtype_policy,
                                   **self.encoder_config)
        self._make_token_embedding()

    def _parts(self):
        parts = []
        for block in (self.encoder.forward_block, self.encoder.backward_block):
            parts.append((block.name, block))
            for sublayer in (block.attention, block.fusion_gate, block.feed_forward):
                parts.append((f"{block.name}.{sublayer.name}", sublayer))
        if self.encoder.source2token is not None:
            parts.append(("source2token", self.encoder.source2token))
        return parts

    def prior_bias(self, length):
        """The distance prior's bias α·M_dis (eq. (7)'s term, or another prior's, learned
        values included) of each block, for sentences of `length` tokens: {"forward",
        "backward"}: float32 [T, T], before the masks."""
        self.ensure_built()
        distances = masks.distances(length)
        return {block.direction: block.attention.prior(distances)
                for block in (self.encoder.forward_block, self.encoder.backward_block)}

    def visible_keys(self, side, length):
        """bool [T, T]: the keys each query of the `side` ("forward" or "backward") block
        may attend to before padding: its direction's mask, or with
        `use_direction_mask=False` every key but the diagonal."""
        if self.encoder_config["use_direction_mask"]:
            return masks.directional_mask(length, side)
        return masks.off_diagonal_mask(length)

    def sentence_intermediates(self, token_ids):
        """What the encoder computes on the way (for the paper's Figures 7-13).

        Args:
            token_ids: int [B, T].

        Returns:
            dict: `forward`, `backward` (each with `attention_weights` [B, H, T, T],
            `gate` [B, T, D], `ffn_hidden` [B, T, F], `output` [B, T, D]), `encoded`
            U = [U_fw; U_bw] [B, T, 2D] and, with source2token pooling, `s2t_weights`
            [B, T, 2D]; inference mode (no dropout).
        """
        self.ensure_built()
        vectors = self.token_embedding(token_ids)
        _, info = self.encoder(vectors, padding_mask=masks.padding_mask(token_ids),
                               training=False, return_intermediates=True)
        return info

    def get_config(self):
        return dict(super().get_config(), **self.encoder_config)
