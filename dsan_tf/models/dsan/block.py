"""One direction of the DSAN encoder: attention -> fusion gate -> FFN (Im & Cho, 2017, Fig. 2).

Shape legend: B batch, T tokens, D width, H heads, F FFN hidden width.
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.models.dsan.attention import MaskedMultiHeadAttention
from dsan_tf.layers.feed_forward import PositionwiseFeedForward
from dsan_tf.layers.fusion import FusionGate
from dsan_tf.layers.utils import clone_initializer


@keras.saving.register_keras_serializable(package="dsan_tf")
class DSANBlock(keras.layers.Layer):
    """A forward or backward DSAN block.

    H = MaskedMultiHeadAttention(S)   (eq. 7-9)
    G = FusionGate(S, H)               (eq. 11-12)
    U = PositionwiseFeedForward(G)     (eq. 13)

    Args:
        direction: `"forward"` or `"backward"`.
        num_heads: int, H.
        ffn_dim: int, F; None means 4·D, the paper's ratio.
        use_direction_mask, distance_prior, distance_alpha, prior_max_distance: see
            `MaskedMultiHeadAttention`.
        fusion: `"projected"` (paper) or `"raw"` (DiSAN), see `FusionGate`.
        qkv_norm: `"per_head"`, `"full"` or `"shared"`, see `MaskedMultiHeadAttention`.
        dropout: float, on the attention output and inside the gate.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of every projection.
        attention_scale, initialization: see `MaskedMultiHeadAttention`.
        fusion_norm: `"separate"` or `"shared"`; fusion_output_norm: bool (`FusionGate`'s
            `shared_norm` and `output_norm`).
        ffn_dropout: bool; `dropout` also on the FFN's output (SAN4NLI's).

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T], True on real tokens.
        training: bool.
        return_intermediates: bool; also return a dict with `attention_weights`
            [B, H, T, T], `gate` [B, T, D] and `ffn_hidden` [B, T, F].

    Returns:
        float [B, T, D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.backbone import arguments_of
    from dsan_tf.models.dsan import DSANBlock
    from dsan_tf.models.dsan.config import DSANConfig

    # The paper's values (DSANConfig's defaults), two heads and a 16-wide FFN.
    config = DSANConfig(num_heads=2, ffn_dim=16)
    block = DSANBlock("backward", **arguments_of(DSANBlock, config))
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    outputs = block(x, padding_mask=mask)  # [2, 5, 8]
    ```
    """

    def __init__(self, direction, num_heads, ffn_dim, use_direction_mask, distance_prior,
                 distance_alpha, prior_max_distance, fusion, qkv_norm, dropout,
                 layer_norm_epsilon, attention_scale, fusion_norm, fusion_output_norm,
                 ffn_dropout, initialization, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.direction = direction
        self.num_heads = num_heads
        self.ffn_dim = ffn_dim
        self.use_direction_mask = use_direction_mask
        self.distance_prior = distance_prior
        self.distance_alpha = distance_alpha
        self.prior_max_distance = prior_max_distance
        self.fusion = fusion
        self.qkv_norm = qkv_norm
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.attention_scale = attention_scale
        self.fusion_norm = fusion_norm
        self.fusion_output_norm = fusion_output_norm
        self.ffn_dropout = ffn_dropout
        self.initialization = initialization

    def build(self, inputs_shape):
        common = {"layer_norm_epsilon": self.layer_norm_epsilon, "dtype": self.dtype_policy,
                  "initialization": self.initialization}
        initializer = lambda name: clone_initializer(self.kernel_initializer, name)  # noqa: E731
        self.attention = MaskedMultiHeadAttention(
            num_heads=self.num_heads, direction=self.direction,
            use_direction_mask=self.use_direction_mask,
            distance_prior=self.distance_prior, distance_alpha=self.distance_alpha,
            prior_max_distance=self.prior_max_distance, dropout=self.dropout,
            qkv_norm=self.qkv_norm, attention_scale=self.attention_scale,
            name="masked_attention",
            kernel_initializer=initializer("masked_attention"),
            **common)
        self.fusion_gate = FusionGate(
            fusion=self.fusion, dropout=self.dropout, name="fusion_gate",
            shared_norm=self.fusion_norm == "shared", output_norm=self.fusion_output_norm,
            kernel_initializer=initializer("fusion_gate"), **common)
        self.feed_forward = PositionwiseFeedForward(
            ffn_dim=self.ffn_dim or 4 * inputs_shape[-1], name="feed_forward",
            dropout=self.dropout if self.ffn_dropout else 0.0,
            kernel_initializer=initializer("feed_forward"), **common)
        self.attention.build(inputs_shape)
        self.fusion_gate.build(inputs_shape)
        self.feed_forward.build(inputs_shape)
        self.built = True

    def call(self, inputs, padding_mask=None, training=None, return_intermediates=False,
             partners=()):
        """The block (eq. 7-13) for this block and its `partners` (other built blocks of one
        configuration, directions may differ) on the same inputs as one pass of ops, each
        sublayer's weights stacked at run time: the encoder's forward and backward blocks.

        Args:
            inputs: float [B, T, D].
            padding_mask: optional bool [B, T].
            training: bool (dropout).
            return_intermediates: also return {"attention_weights" [B, H, T, T], "gate" [B,
                T, D], "ffn_hidden" [B, T, F]}.
            partners: blocks computed with this one.

        Returns:
            float [B, T, D] (and the intermediates), each with a leading axis N = 1 +
            len(partners), in the order [self, *partners], when partners are given.
        """
        context, weights = self.attention(
            inputs, padding_mask=padding_mask, training=training, return_attention_scores=True,
            partners=tuple(block.attention for block in partners))
        fused, gate = self.fusion_gate(
            inputs, context, training=training, return_gate=True,
            partners=tuple(block.fusion_gate for block in partners))
        outputs, hidden = self.feed_forward(
            fused, training=training, return_hidden=True,
            partners=tuple(block.feed_forward for block in partners))
        if return_intermediates:
            return outputs, {"attention_weights": weights, "gate": gate, "ffn_hidden": hidden}
        return outputs

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "direction": self.direction,
            "num_heads": self.num_heads,
            "ffn_dim": self.ffn_dim,
            "use_direction_mask": self.use_direction_mask,
            "distance_prior": self.distance_prior,
            "distance_alpha": self.distance_alpha,
            "prior_max_distance": self.prior_max_distance,
            "fusion": self.fusion,
            "qkv_norm": self.qkv_norm,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "attention_scale": self.attention_scale,
            "fusion_norm": self.fusion_norm,
            "fusion_output_norm": self.fusion_output_norm,
            "ffn_dropout": self.ffn_dropout,
            "initialization": self.initialization,
        })
        return config
