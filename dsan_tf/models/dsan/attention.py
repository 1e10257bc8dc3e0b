"""Masked multi-head attention (Im & Cho, 2017, Section 4.2.2: eq. 7-9, Figures 3-4).

Shape legend: B batch, T tokens, D model width (d_e), H heads, K = D / H (d_k).
"""

import math

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks, stacking
from dsan_tf.layers.distance_prior import DistancePrior
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import initialized_dense
from dsan_tf.models.dsan.config import ATTENTION_SCALES, QKV_NORMS


def _heads(layers, inputs, name):
    """The normalised projections `name` ("query", "key" or "value") of N layers of
    inputs [B, T, D], split into heads: [N, B, T, H, K]."""
    first = layers[0]
    shape = (len(layers), ops.shape(inputs)[0], ops.shape(inputs)[1], first.num_heads,
             first.key_dim)
    projected = stacking.dense([getattr(layer, f"{name}_dense") for layer in layers], inputs,
                               shared=True)
    norms = [getattr(layer, f"{name}_norm") for layer in layers]
    if first.qkv_norm == "full":
        return ops.reshape(stacking.layer_norm(norms, projected), shape)
    return stacking.layer_norm(norms, ops.reshape(projected, shape))


def _attend(layers, inputs, visible):
    """Eq. 7 for N layers: the heads' contexts joined, [N, B, T, D], and the attention
    weights [N, B, H, T, T], of inputs [B, T, D] with the keys `visible` [N, 1 or B, 1, T,
    T] may attend to."""
    first, count = layers[0], len(layers)
    batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
    # Scaling the [N, B, T, H, K] queries rather than the [N, B, H, T, T] logits keeps
    # the backward pass from holding on to the unscaled logits.
    scale = first.key_dim * (1 if first.attention_scale == "d_k" else first.num_heads)
    query = _heads(layers, inputs, "query") * (1.0 / math.sqrt(scale))
    key = _heads(layers, inputs, "key")
    value = _heads(layers, inputs, "value")
    # M_dir, padding and the prior as one float32 bias [N, B, 1, T, T]. A masked key's
    # weight underflows to exactly 0 whenever its row has a visible key.
    distances = masks.distances(length)
    prior = ops.stack([layer.prior(distances) for layer in layers])[:, None, None]
    bias = ops.where(visible, prior, masks.LARGE_NEGATIVE)
    # Logits and softmax in float32 so that masking stays finite in half precision.
    merged = (count * batch, length, first.num_heads, first.key_dim)
    logits = ops.einsum("bqhk,bthk->bhqt", ops.reshape(query, merged),
                        ops.reshape(key, merged))
    logits = ops.reshape(logits, (count, batch, first.num_heads, length, length))
    weights = masks.softmax(ops.cast(logits, "float32") + bias, axis=-1)
    context = ops.einsum("bhqt,bthk->bqhk", ops.reshape(
        ops.cast(weights, value.dtype), (count * batch, first.num_heads, length, length)),
        ops.reshape(value, merged))
    return ops.reshape(context, (count, batch, length, inputs.shape[-1])), weights


@keras.saving.register_keras_serializable(package="dsan_tf")
class MaskedMultiHeadAttention(keras.layers.Layer):
    """Multi-head self-attention with the directional and distance masks.

    head_h = softmax(Q_h K_hᵀ / √K + M_dir + α·M_dis) V_h (eq. 7), heads concatenated and
    projected by W^O (eq. 8), Q = K = V = the word vectors (eq. 9). The projections carry no
    bias and are layer-normalised (Section 5.2) per head or over all heads (`qkv_norm`); W^O
    has a bias and is followed by LayerNorm and dropout (docs/FIDELITY.md#layernorm-q-k-v,
    #biases, #dropout-sites). α·M_dis is the `linear` member of a family of distance priors
    (`DistancePrior`).

    The masks and the prior are one [T, T] grid per call, joined with the padding into
    one bias [B, 1, T, T] that broadcasts over the heads: the [B, H, T, T] logits and
    their softmax are the largest tensors the layer makes. With `partners`, `call` computes
    N such layers at once (the encoder's two directions: [N, B, H, T, T] logits).

    Masked keys (direction, diagonal, padding) get weight exactly 0. A query with no
    visible key (the first token forward, the last backward, a one-token sentence, a
    padded query) gets a zero output vector rather than NaN.

    Args:
        num_heads: int, H. D must be divisible by H.
        direction: `"forward"` or `"backward"`.
        use_direction_mask: bool. False masks only the diagonal (an ablation).
        distance_prior: one of `PRIORS`; `"linear"` is the paper's α·M_dis and
            `"none"` its Table 1 ablation.
        distance_alpha: float, α of the linear prior (the paper uses 1.5). Not trained.
        prior_max_distance: int, distances above this share a `learned` prior bias.
        dropout: float, dropout rate on the attention output.
        qkv_norm: `"per_head"` (one LayerNorm over each head's K-wide projection, γ and β
            shared by the heads), `"full"` (one LayerNorm over the D-wide projection,
            before it is split into heads) or `"shared"` (per head, one LayerNorm for Q,
            K and V: SAN4NLI's).
        attention_scale: `"d_k"` (eq. 7: logits / √K) or `"d_e"` (logits / √D, SAN4NLI's).
        layer_norm_epsilon: float.
        kernel_initializer: initializer for the projections.
        initialization: `"glorot"` or `"san4nli"` (`dense_initializers`: Q, K, V as SAN4NLI's
            Xavier-normal [H, D, K] tensors, std √(2 / (D·K + H·K)); W^O as PyTorch's
            `nn.Linear`).

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T], True on real tokens.
        training: bool.
        return_attention_scores: bool; also return the weights [B, H, T, T].

    Returns:
        float [B, T, D] (and the weights when asked).

    Examples:
    ```python
    import numpy as np
    from dsan_tf.models.backbone import arguments_of
    from dsan_tf.models.dsan import MaskedMultiHeadAttention
    from dsan_tf.models.dsan.config import DSANConfig

    config = DSANConfig(num_heads=2)  # the paper's values (DSANConfig's defaults)
    attention = MaskedMultiHeadAttention(
        direction="forward", **arguments_of(MaskedMultiHeadAttention, config))
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    context, weights = attention(x, padding_mask=mask, return_attention_scores=True)
    # context [2, 5, 8]; weights [2, 2, 5, 5], each row over the earlier words only
    ```
    """

    def __init__(self, num_heads, direction, use_direction_mask, distance_prior,
                 distance_alpha, prior_max_distance, dropout, qkv_norm, attention_scale,
                 layer_norm_epsilon, initialization, kernel_initializer="glorot_uniform",
                 **kwargs):
        super().__init__(**kwargs)
        if direction not in masks.DIRECTIONS:
            raise ValueError(f"direction must be one of {masks.DIRECTIONS}, got {direction!r}.")
        if qkv_norm not in QKV_NORMS:
            raise ValueError(f"qkv_norm must be one of {QKV_NORMS}, got {qkv_norm!r}.")
        if attention_scale not in ATTENTION_SCALES:
            raise ValueError(f"attention_scale must be one of {ATTENTION_SCALES}, "
                             f"got {attention_scale!r}.")
        self.num_heads = num_heads
        self.direction = direction
        self.use_direction_mask = use_direction_mask
        self.distance_prior = distance_prior
        self.distance_alpha = distance_alpha
        self.prior_max_distance = prior_max_distance
        self.dropout = dropout
        self.qkv_norm = qkv_norm
        self.attention_scale = attention_scale
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.initialization = initialization

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        if width % self.num_heads:
            raise ValueError(f"width {width} is not divisible by num_heads={self.num_heads}.")
        self.key_dim = width // self.num_heads
        norm_shape = (inputs_shape if self.qkv_norm == "full" else
                      tuple(inputs_shape[:-1]) + (self.num_heads, self.key_dim))
        # SAN4NLI's Xavier-normal of a [H, D, K] tensor: fan_in D·K, fan_out H·K.
        head_std = math.sqrt(2.0 / (width * self.key_dim + self.num_heads * self.key_dim))

        def dense(name, use_bias, normal_std=None):
            layer = initialized_dense(width, name, self, width, use_bias, normal_std)
            layer.build(inputs_shape)
            return layer

        def norm(name, shape):
            layer = LayerNorm(
                epsilon=self.layer_norm_epsilon, name=name, dtype=self.dtype_policy)
            layer.build(shape)
            return layer

        self.query_dense = dense("query", use_bias=False, normal_std=head_std)
        self.key_dense = dense("key", use_bias=False, normal_std=head_std)
        self.value_dense = dense("value", use_bias=False, normal_std=head_std)
        if self.qkv_norm == "shared":
            self.query_norm = self.key_norm = self.value_norm = norm("qkv_norm", norm_shape)
        else:
            self.query_norm = norm("query_norm", norm_shape)
            self.key_norm = norm("key_norm", norm_shape)
            self.value_norm = norm("value_norm", norm_shape)
        self.output_dense = dense("attention_output", use_bias=True)
        self.output_norm = norm("attention_output_norm", inputs_shape)
        self.output_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        # float32 whatever the policy: the prior is added to float32 logits.
        self.prior = DistancePrior(self.distance_prior, alpha=self.distance_alpha,
                                   max_distance=self.prior_max_distance,
                                   name="distance_prior", dtype="float32")
        self.prior.build((None, None))
        self.built = True

    def visibility(self, length, padding_mask=None):
        """Which key each query may attend to: bool [1 or B, 1, T, T]."""
        if self.use_direction_mask:
            visible = masks.directional_mask(length, self.direction)
        else:
            visible = masks.off_diagonal_mask(length)
        visible = visible[None, None, :, :]
        if padding_mask is not None:
            padding_mask = ops.cast(padding_mask, "bool")
            # Padded keys are invisible; padded queries see nothing and output zeros.
            visible = ops.logical_and(visible, padding_mask[:, None, None, :])
            visible = ops.logical_and(visible, padding_mask[:, None, :, None])
        return visible

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False,
             partners=()):
        """Eq. 7-9 for this layer and its `partners` (other built layers of one
        configuration, directions may differ) on the same inputs as one pass of ops, their
        weights stacked at run time (`dsan_tf.layers.stacking`): the encoder's two
        directions.

        Args:
            inputs: float [B, T, D], the word vectors (Q = K = V, eq. 9).
            padding_mask: optional bool [B, T].
            training: bool (dropout).
            return_attention_scores: also return the weights [B, H, T, T].
            partners: layers computed with this one.

        Returns:
            float [B, T, D] (and the weights), each with a leading axis N = 1 +
            len(partners), in the order [self, *partners], when partners are given.
        """
        layers = [self, *partners]
        length = ops.shape(inputs)[1]
        visible = ops.stack([layer.visibility(length, padding_mask) for layer in layers])
        context, weights = _attend(layers, inputs, visible)
        outputs = stacking.layer_norm(
            [layer.output_norm for layer in layers],
            stacking.dense([layer.output_dense for layer in layers], context))
        # A query that saw no key has no context: its attention output is defined as 0.
        has_key = ops.any(visible, axis=-1)[:, :, 0, :, None]
        outputs = outputs * ops.cast(has_key, outputs.dtype)
        outputs = stacking.dropout([layer.output_dropout for layer in layers], outputs,
                                   training)
        if not partners:
            outputs, weights, visible = outputs[0], weights[0], visible[0]
        if return_attention_scores:
            # A row without a visible key has meaningless weights: report them as 0.
            return outputs, weights * ops.cast(visible, "float32")
        return outputs

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "direction": self.direction,
            "use_direction_mask": self.use_direction_mask,
            "distance_prior": self.distance_prior,
            "distance_alpha": self.distance_alpha,
            "prior_max_distance": self.prior_max_distance,
            "dropout": self.dropout,
            "qkv_norm": self.qkv_norm,
            "attention_scale": self.attention_scale,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "initialization": self.initialization,
        })
        return config
