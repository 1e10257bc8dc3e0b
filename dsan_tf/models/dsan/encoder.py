"""The DSAN sentence encoder (Im & Cho, 2017, Section 4.2 and Figure 2).

Shape legend: B batch, T tokens, D word width (d_e), H heads, F FFN hidden width.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.models.dsan.config import POOLINGS
from dsan_tf.models.dsan.block import DSANBlock
from dsan_tf.layers.pooling import MaskedMaxPooling, Source2TokenAttention
from dsan_tf.layers.utils import clone_initializer
from dsan_tf.models.backbone import arguments_of



@keras.saving.register_keras_serializable(package="dsan_tf")
class DSANEncoder(keras.layers.Layer):
    """Forward block + backward block + pooling -> one vector per sentence.

    U = [U_fw; U_bw] (B, T, 2D); the sentence vector is
    `pooling="multi_dim_max"`: [source2token(U); max(U)]  (B, 4D), the paper;
    `pooling="multi_dim"`:     source2token(U)            (B, 2D);
    `pooling="max"`:           max(U)                     (B, 2D).
    The forward and backward blocks have separate weights; they are computed as one pass
    of ops, their weights stacked at run time (`DSANBlock.call` with `partners`): the values each
    block computes alone, with one dropout draw for both.

    Args:
        num_heads, ffn_dim, use_direction_mask, distance_prior, distance_alpha,
            prior_max_distance, fusion, qkv_norm, dropout, layer_norm_epsilon,
            attention_scale, fusion_norm, fusion_output_norm, ffn_dropout, initialization,
            kernel_initializer: passed to both `DSANBlock` blocks (`initialization` and
            `kernel_initializer` also to source2token).
        pooling: one of `POOLINGS`.
        s2t_norm: `"separate"` or `"shared"` (`Source2TokenAttention`'s `shared_norm`).
        max_pool_padding: `"masked"` or `"zeros"` (`MaskedMaxPooling`'s `padding`).

    Call arguments:
        inputs: float [B, T, D], word embeddings.
        padding_mask: optional bool [B, T], True on real tokens.
        training: bool.
        return_intermediates: bool; also return a dict with `forward` and `backward`
            (each the block's intermediates plus `output` [B, T, D]), `encoded` U
            [B, T, 2D] and, when used, `s2t_weights` [B, T, 2D].

    Returns:
        float [B, output_dim].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.backbone import arguments_of
    from dsan_tf.models.dsan import DSANEncoder
    from dsan_tf.models.dsan.config import DSANConfig

    # The paper's values (DSANConfig's defaults), two heads and a 16-wide FFN.
    config = DSANConfig(num_heads=2, ffn_dim=16)
    encoder = DSANEncoder(**arguments_of(DSANEncoder, config))
    x = np.random.rand(2, 5, 8).astype("float32")  # B 2, T 5, D 8
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    vectors = encoder(x, padding_mask=mask)  # [2, 32]
    ```
    """

    def __init__(self, num_heads, ffn_dim, use_direction_mask, distance_prior,
                 distance_alpha, prior_max_distance, fusion, pooling, qkv_norm, dropout,
                 layer_norm_epsilon, attention_scale, fusion_norm, fusion_output_norm,
                 ffn_dropout, s2t_norm, max_pool_padding, initialization,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}.")
        self.num_heads = num_heads
        self.ffn_dim = ffn_dim
        self.use_direction_mask = use_direction_mask
        self.distance_prior = distance_prior
        self.distance_alpha = distance_alpha
        self.prior_max_distance = prior_max_distance
        self.fusion = fusion
        self.pooling = pooling
        self.qkv_norm = qkv_norm
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.attention_scale = attention_scale
        self.fusion_norm = fusion_norm
        self.fusion_output_norm = fusion_output_norm
        self.ffn_dropout = ffn_dropout
        self.s2t_norm = s2t_norm
        self.max_pool_padding = max_pool_padding
        self.initialization = initialization

    def _block_config(self):
        """The blocks' arguments, passed through unchanged: those of `DSANBlock`'s that the
        encoder holds (its direction and initializer are set per block)."""
        held = {name: getattr(self, name) for name in vars(self) if not name.startswith("_")}
        held.pop("kernel_initializer", None)
        return arguments_of(DSANBlock, held)

    def build(self, inputs_shape):
        initializer = lambda name: clone_initializer(self.kernel_initializer, name)  # noqa: E731
        self.forward_block = DSANBlock(
            "forward", name="forward_block", dtype=self.dtype_policy,
            kernel_initializer=initializer("forward_block"), **self._block_config())
        self.backward_block = DSANBlock(
            "backward", name="backward_block", dtype=self.dtype_policy,
            kernel_initializer=initializer("backward_block"), **self._block_config())
        self.forward_block.build(inputs_shape)
        self.backward_block.build(inputs_shape)
        encoded_shape = tuple(inputs_shape[:-1]) + (2 * inputs_shape[-1],)
        self.source2token = None
        self.max_pooling = None
        if self.pooling in ("multi_dim_max", "multi_dim"):
            self.source2token = Source2TokenAttention(
                layer_norm_epsilon=self.layer_norm_epsilon, name="source2token",
                shared_norm=self.s2t_norm == "shared", initialization=self.initialization,
                kernel_initializer=initializer("source2token"), dtype=self.dtype_policy)
            self.source2token.build(encoded_shape)
        if self.pooling in ("multi_dim_max", "max"):
            self.max_pooling = MaskedMaxPooling(padding=self.max_pool_padding,
                                                name="max_pooling", dtype=self.dtype_policy)
            # Built now though it has no weights: Keras' `predict` on JAX runs a model
            # with an unbuilt layer eagerly once to build it (16 s of op compiles for
            # SNLI dev's first batch, records/runs/text_predict_snli_dev.json).
            self.max_pooling.build(encoded_shape)
        self.built = True

    def output_dim(self, input_dim):
        """Width of the sentence vector for word vectors of width `input_dim`."""
        return (4 if self.pooling == "multi_dim_max" else 2) * input_dim

    def call(self, inputs, padding_mask=None, training=None, return_intermediates=False):
        # Both directions in one pass of ops (their weights stacked at run time): a
        # compiled step holds the block once.
        outputs, stacked = self.forward_block(
            inputs, padding_mask=padding_mask, training=training, return_intermediates=True,
            partners=(self.backward_block,))
        # Unstacked, not indexed: the gradient of `outputs[i]` in TensorFlow's graph fills
        # a zero tensor of both directions per slice (StridedSliceGrad): 0-5% of the CPU's
        # gradient at d_e 300, measured on a 2-core Xeon (2026-11-27).
        # The intermediates are sliced only when asked for.
        directions = ops.unstack(outputs, 2)
        encoded = ops.concatenate(directions, axis=-1)
        info = {}
        if return_intermediates:
            info = {side: dict({name: value[index] for name, value in stacked.items()},
                               output=directions[index])
                    for index, side in enumerate(("forward", "backward"))}
            info["encoded"] = encoded
        pooled = []
        if self.source2token is not None:
            vector, info["s2t_weights"] = self.source2token(
                encoded, padding_mask=padding_mask, return_attention_scores=True)
            pooled.append(vector)
        if self.max_pooling is not None:
            pooled.append(self.max_pooling(encoded, padding_mask=padding_mask))
        outputs = ops.concatenate(pooled, axis=-1) if len(pooled) > 1 else pooled[0]
        if return_intermediates:
            return outputs, info
        return outputs

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], self.output_dim(inputs_shape[-1]))

    def get_config(self):
        config = super().get_config()
        config.update(self._block_config())
        config["pooling"] = self.pooling
        config["s2t_norm"] = self.s2t_norm
        config["max_pool_padding"] = self.max_pool_padding
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return config
