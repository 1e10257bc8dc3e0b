"""DiSAN, the baseline of Shen et al. (2017), "DiSAN: Directional Self-Attention Network
for RNN/CNN-Free Language Understanding" (eq. numbers below are theirs).

Shape legend: B batch, T tokens, D width (d_e = d_h). Query i, key j.

Unlike DSAN's multi-head dot-product attention, DiSAN's token2token attention scores
every (i, j) pair with a D-dimensional vector, so it materialises [B, T, T, D].
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.layers.fusion import FusionGate
from dsan_tf.layers.pooling import Source2TokenAttention
from dsan_tf.layers.utils import clone_initializer


@keras.saving.register_keras_serializable(package="dsan_tf")
class MultiDimensionalTokenAttention(keras.layers.Layer):
    """Directional multi-dimensional token2token attention (DiSAN eq. 15-17).

    f(h_i, h_j) = c·tanh((W1 h_j + W2 h_i + b) / c) + M_ij   (vector-valued, c = 5)
    s_i = Σ_j softmax_j(f(h_i, h_j)) ⊙ h_j                   (one softmax per dimension)

    M masks the diagonal and the other direction (forward: j < i) and padded keys. A
    query with no visible key gets s_i = 0.

    Args:
        direction: `"forward"` or `"backward"`.
        scale: float, c.
        kernel_initializer: initializer of W1, W2.

    Call arguments:
        inputs: float [B, T, D], h.
        padding_mask: optional bool [B, T].
        return_attention_scores: bool.

    Returns:
        float [B, T, D]; with `return_attention_scores` also the weights [B, T, T, D]
        (query, key, dimension; masked keys exactly 0).
    """

    def __init__(self, direction="forward", scale=5.0, kernel_initializer="glorot_uniform",
                 **kwargs):
        super().__init__(**kwargs)
        if direction not in masks.DIRECTIONS:
            raise ValueError(f"direction must be one of {masks.DIRECTIONS}, got {direction!r}.")
        self.direction = direction
        self.scale = scale
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        dense = lambda name, bias: keras.layers.Dense(  # noqa: E731
            width, use_bias=bias, name=name, dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, name))
        self.key_dense = dense("key", bias=False)
        self.query_dense = dense("query", bias=True)  # its bias is DiSAN's b
        self.key_dense.build(inputs_shape)
        self.query_dense.build(inputs_shape)
        self.built = True

    def call(self, inputs, padding_mask=None, return_attention_scores=False):
        length = ops.shape(inputs)[1]
        visible = masks.directional_mask(length, self.direction)[None]
        if padding_mask is not None:
            padding_mask = ops.cast(padding_mask, "bool")
            visible = ops.logical_and(visible, padding_mask[:, None, :])
        pre = self.key_dense(inputs)[:, None, :, :] + self.query_dense(inputs)[:, :, None, :]
        scores = ops.cast(self.scale * ops.tanh(pre / self.scale), "float32")
        scores = ops.where(visible[..., None], scores, masks.LARGE_NEGATIVE)
        weights = masks.softmax(scores, axis=2)  # over keys j, per dimension
        context = ops.einsum("bijd,bjd->bid", ops.cast(weights, inputs.dtype), inputs)
        has_key = ops.any(visible, axis=-1)[..., None]
        context = context * ops.cast(has_key, context.dtype)
        if return_attention_scores:
            return context, weights * ops.cast(visible[..., None], weights.dtype)
        return context

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "direction": self.direction, "scale": self.scale,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        })
        return config


@keras.saving.register_keras_serializable(package="dsan_tf")
class DiSABlock(keras.layers.Layer):
    """One directional self-attention block of DiSAN (DiSAN Section 4.1, Figure 3).

    h = ELU(dropout(x) W^h + b^h); s = token2token(h); u = F ⊙ h + (1 - F) ⊙ s with
    the raw-input fusion gate F (`FusionGate(fusion="raw")`); padded tokens output 0.

    Args:
        direction: `"forward"` or `"backward"`.
        dropout: float, on the block input and inside the gate.
        layer_norm_epsilon: float, of the gate's LayerNorms.
        kernel_initializer: initializer of every projection.

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T].
        training: bool.
        return_intermediates: bool; also return a dict with `attention_weights` [B, 1, T,
            T] (the token2token weights averaged over the D dimensions: one map, each row
            still sums to 1), `dimension_weights` [B, T, T, D] and `gate` F [B, T, D].

    Returns:
        float [B, T, D] (and the dict).
    """

    def __init__(self, direction, dropout, layer_norm_epsilon,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.direction = direction
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape):
        initializer = lambda name: clone_initializer(self.kernel_initializer, name)  # noqa: E731
        self.input_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.token_map = keras.layers.Dense(
            inputs_shape[-1], activation="elu", name="token_map", dtype=self.dtype_policy,
            kernel_initializer=initializer("token_map"))
        self.attention = MultiDimensionalTokenAttention(
            self.direction, kernel_initializer=initializer("token2token"), name="token2token",
            dtype=self.dtype_policy)
        self.fusion_gate = FusionGate(
            fusion="raw", dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon,
            shared_norm=False, output_norm=False, initialization="glorot",
            kernel_initializer=initializer("fusion_gate"), name="fusion_gate",
            dtype=self.dtype_policy)
        for layer in (self.token_map, self.attention, self.fusion_gate):
            layer.build(inputs_shape)
        self.built = True

    def call(self, inputs, padding_mask=None, training=None, return_intermediates=False):
        hidden = self.token_map(self.input_dropout(inputs, training=training))
        context, weights = self.attention(hidden, padding_mask=padding_mask,
                                          return_attention_scores=True)
        outputs, gate = self.fusion_gate(hidden, context, training=training, return_gate=True)
        if padding_mask is not None:
            outputs = outputs * ops.cast(padding_mask, outputs.dtype)[:, :, None]
        if return_intermediates:
            return outputs, {"attention_weights": ops.mean(weights, axis=-1)[:, None],
                             "dimension_weights": weights, "gate": gate}
        return outputs

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "direction": self.direction, "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        })
        return config


@keras.saving.register_keras_serializable(package="dsan_tf")
class DiSANEncoder(keras.layers.Layer):
    """DiSAN sentence encoder: source2token([DiSA_fw(x); DiSA_bw(x)]) (DiSAN Section 4.2).

    Forward and backward blocks have separate weights; source2token is the one DSAN
    uses (`Source2TokenAttention`), so the sentence vector has width 2D.

    Args:
        dropout, layer_norm_epsilon, kernel_initializer: see `DiSABlock`.

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T].
        training: bool.
        return_intermediates: bool; also return a dict with `forward` and `backward`
            (each `DiSABlock`'s, with its `output` [B, T, D]), `encoded` [B, T, 2D] and
            `s2t_weights` [B, T, 2D].

    Returns:
        float [B, 2D] (and the dict).

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.disan import DiSANEncoder

    encoder = DiSANEncoder(dropout=0.1, layer_norm_epsilon=1e-5)  # DiSANConfig's values
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    vectors = encoder(x, padding_mask=mask)  # [2, 16]
    ```
    """

    def __init__(self, dropout, layer_norm_epsilon, kernel_initializer="glorot_uniform",
                 **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape):
        initializer = lambda name: clone_initializer(self.kernel_initializer, name)  # noqa: E731
        common = dict(dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon,
                      dtype=self.dtype_policy)
        self.forward_block = DiSABlock("forward", name="forward_block",
                                       kernel_initializer=initializer("forward_block"), **common)
        self.backward_block = DiSABlock("backward", name="backward_block",
                                        kernel_initializer=initializer("backward_block"),
                                        **common)
        self.forward_block.build(inputs_shape)
        self.backward_block.build(inputs_shape)
        self.source2token = Source2TokenAttention(
            layer_norm_epsilon=self.layer_norm_epsilon, shared_norm=False,
            initialization="glorot", name="source2token",
            kernel_initializer=initializer("source2token"), dtype=self.dtype_policy)
        self.source2token.build(tuple(inputs_shape[:-1]) + (2 * inputs_shape[-1],))
        self.built = True

    def output_dim(self, input_dim):
        return 2 * input_dim

    def call(self, inputs, padding_mask=None, training=None, return_intermediates=False):
        info = {}
        for side, block in (("forward", self.forward_block), ("backward", self.backward_block)):
            output, block_info = block(inputs, padding_mask=padding_mask, training=training,
                                       return_intermediates=True)
            info[side] = dict(block_info, output=output)
        encoded = ops.concatenate([info["forward"]["output"], info["backward"]["output"]],
                                  axis=-1)
        vector, weights = self.source2token(encoded, padding_mask=padding_mask,
                                            return_attention_scores=True)
        if return_intermediates:
            return vector, dict(info, encoded=encoded, s2t_weights=weights)
        return vector

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], self.output_dim(inputs_shape[-1]))

    def get_config(self):
        config = super().get_config()
        config.update({
            "dropout": self.dropout, "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        })
        return config
