"""Multi-head Gaussian self-attention and inter-attention sub-layers of the Gaussian
Transformer (Guo, Zhang & Liu, 2019: eq. (3)-(4) and the "Encoding Blocks" and
"Interaction Blocks" sections).

Shape legend: B batch, Tq query tokens, Tk key tokens, D model width (d_model), H heads,
K = D / H (d_h).
"""

import math

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.layers import masks
from dsan_tf.layers.distance_prior import DistancePrior
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import clone_initializer


@keras.saving.register_keras_serializable(package="dsan_tf")
class GaussianAttentionSublayer(keras.layers.Layer):
    """y = LN(x + Dropout(MultiHead(x, context))), the paper's sub-layer form.

    Self-attention (no `context`): head_h = softmax(Q_h K_hᵀ / √K + prior(|i - j|)) V_h,
    where the prior is eq. (4)'s -|w·d² + b| (w > 0, b ≤ 0, one pair per layer shared by
    its heads) or another `DistancePrior`; unlike DSAN, a token may attend to itself
    (eq. (4) only lowers that weight through b). Inter-attention (`context` given): the
    queries come from one sentence, keys and values from the other, and no prior applies
    (distances across two sentences mean nothing). Q, K, V and output projections carry no
    bias, as in tensor2tensor, which the paper's implementation used.

    Padded keys get weight exactly 0; a padded query's output is its input unchanged
    (the residual), and the backbone ignores it.

    Args:
        num_heads: int, H (the paper: 4). D must be divisible by H.
        distance_prior: one of `PRIORS` for self-attention ("gaussian_variant": eq. (4));
            must be "none" for inter-attention.
        dropout: float, on the sub-layer's output before the residual (0.1).
        layer_norm_epsilon: float.
        kernel_initializer: initializer of the projections.

    Call arguments:
        inputs: float [B, Tq, D], the queries' sentence.
        padding_mask: bool [B, Tq], True on real tokens.
        context: optional float [B, Tk, D], the other sentence (inter-attention).
        context_mask: bool [B, Tk], needed with `context`.
        training: bool.
        return_attention_scores: bool; also return the weights [B, H, Tq, Tk].

    Returns:
        float [B, Tq, D] (and the weights when asked).
    """

    def __init__(self, num_heads, distance_prior, dropout, layer_norm_epsilon,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.distance_prior = distance_prior
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape, context_shape=None):
        width = inputs_shape[-1]
        if width % self.num_heads:
            raise ValueError(f"width {width} is not divisible by num_heads={self.num_heads}.")
        self.key_dim = width // self.num_heads

        def dense(name):
            layer = keras.layers.Dense(
                width, use_bias=False, name=name, dtype=self.dtype_policy,
                kernel_initializer=clone_initializer(self.kernel_initializer, name))
            layer.build(inputs_shape)
            return layer

        self.query_dense, self.key_dense = dense("query"), dense("key")
        self.value_dense, self.output_dense = dense("value"), dense("attention_output")
        self.output_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.output_norm = LayerNorm(epsilon=self.layer_norm_epsilon, name="attention_norm",
                                     dtype=self.dtype_policy)
        self.output_norm.build(inputs_shape)
        # float32 whatever the policy: the prior joins float32 logits.
        self.prior = DistancePrior(self.distance_prior, name="distance_prior", dtype="float32")
        self.prior.build((None, None))
        self.built = True

    def _heads(self, dense, x):
        shape = (ops.shape(x)[0], ops.shape(x)[1], self.num_heads, self.key_dim)
        return ops.reshape(dense(x), shape)

    def call(self, inputs, padding_mask, context=None, context_mask=None, training=None,
             return_attention_scores=False):
        self_attention = context is None
        if self_attention:
            context, context_mask = inputs, padding_mask
        elif self.distance_prior != "none":
            raise ValueError("inter-attention takes no distance prior: use "
                             "distance_prior='none'.")
        query = self._heads(self.query_dense, inputs) * (1.0 / math.sqrt(self.key_dim))
        key = self._heads(self.key_dense, context)
        value = self._heads(self.value_dense, context)

        visible = ops.cast(context_mask, "bool")[:, None, None, :]  # [B, 1, 1, Tk]
        if self_attention:
            prior = self.prior(masks.distances(ops.shape(inputs)[1]))[None, None]
        else:
            prior = ops.zeros((1, 1, 1, 1), "float32")
        bias = ops.where(visible, prior, masks.LARGE_NEGATIVE)
        # Logits and softmax in float32, so that masking stays finite in half precision.
        logits = ops.cast(ops.einsum("bqhk,bthk->bhqt", query, key), "float32") + bias
        weights = masks.softmax(logits, axis=-1)
        heads = ops.einsum("bhqt,bthk->bqhk", ops.cast(weights, value.dtype), value)
        heads = ops.reshape(heads, ops.shape(inputs))
        attended = self.output_dropout(self.output_dense(heads), training=training)
        outputs = self.output_norm(inputs + attended)
        if return_attention_scores:
            # A padded query's row is meaningless: report it as 0.
            real_query = ops.cast(padding_mask, "float32")[:, None, :, None]
            return outputs, weights * ops.cast(visible, "float32") * real_query
        return outputs

    def compute_output_shape(self, inputs_shape, context_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "distance_prior": self.distance_prior,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        })
        return config
