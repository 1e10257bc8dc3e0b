"""The DiSAN backbone (Shen et al., 2017), DSAN's closest rival, with DSAN's embedding.

Shape legend: B batch, T tokens, D word width, E sentence-vector width (2D).
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.layers import masks
from dsan_tf.models.backbone import SentenceEncoderBackbone
from dsan_tf.models.config import field_defaults
from dsan_tf.models.disan.config import DiSANConfig
from dsan_tf.models.disan.layers import DiSANEncoder


# The constructor's defaults are the configuration's (declared once, in DiSANConfig).
DEFAULTS = field_defaults(DiSANConfig)

@keras.saving.register_keras_serializable(package="dsan_tf")
class DiSANBackbone(SentenceEncoderBackbone):
    """Word embedding -> forward and backward DiSA blocks -> source2token (DiSAN
    Section 4.2).

    Args:
        vocabulary_size: int, V.
        embedding_dim: D.
        dropout: float, on each block's input and inside its gate.
        layer_norm_epsilon: float.
        trainable_embeddings: bool.

    Call arguments:
        token_ids: int [B, T], 0 padding.
        training: bool.

    Returns:
        float [B, 2D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.disan import DiSANBackbone

    backbone = DiSANBackbone(vocabulary_size=100, embedding_dim=8)
    vectors = backbone(np.array([[4, 5, 6, 0]]))  # [1, 16]: 2 D a sentence
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim=DEFAULTS.embedding_dim,
                 dropout=DEFAULTS.dropout, layer_norm_epsilon=DEFAULTS.layer_norm_epsilon,
                 trainable_embeddings=False, **kwargs):
        super().__init__(vocabulary_size, embedding_dim, trainable_embeddings, **kwargs)
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        # Encoder before embedding: the order that reproduces earlier seeds (DSANBackbone).
        self.encoder = DiSANEncoder(dropout=dropout, layer_norm_epsilon=layer_norm_epsilon,
                                    name="disan_encoder", dtype=self.dtype_policy)
        self._make_token_embedding()

    def _parts(self):
        parts = []
        for block in (self.encoder.forward_block, self.encoder.backward_block):
            parts.append((block.name, block))
            for sublayer in (block.token_map, block.attention, block.fusion_gate):
                parts.append((f"{block.name}.{sublayer.name}", sublayer))
        parts.append(("source2token", self.encoder.source2token))
        return parts

    def sentence_intermediates(self, token_ids):
        """What the encoder computes on the way (the figures of `dsan_tf.evaluation.analysis`, as
        DSAN's Figures 7, 9 and 11 show them; DiSAN has no FFN, so no Figure 10).

        Args:
            token_ids: int [B, T].

        Returns:
            dict: `forward`, `backward` (each with `attention_weights` [B, 1, T, T], the
            multi-dimensional weights averaged over dimensions, `dimension_weights` [B, T,
            T, D], `gate` [B, T, D], `output` [B, T, D]), `encoded` [B, T, 2D] and
            `s2t_weights` [B, T, 2D]; inference mode (no dropout).
        """
        self.ensure_built()
        vectors = self.token_embedding(token_ids)
        _, info = self.encoder(vectors, padding_mask=masks.padding_mask(token_ids),
                               training=False, return_intermediates=True)
        return info

    def get_config(self):
        return dict(super().get_config(), dropout=self.dropout,
                    layer_norm_epsilon=self.layer_norm_epsilon)
