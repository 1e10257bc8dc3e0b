"""The blocks of the Gaussian Transformer (Guo, Zhang & Liu, 2019): the embedding block
(eq. (5)-(9)), encoding blocks, interaction blocks and the Siamese aggregation of the
comparison block (eq. (13)-(15)).

Shape legend: B batch, T tokens (T1 premise, T2 hypothesis), W frozen token features
(d_w + d_c), D model width (d_model).
"""

from dsan_tf.common.frameworks import keras, ops
import numpy as np

from dsan_tf.layers.feed_forward import PositionwiseFeedForward
from dsan_tf.models.gaussian_transformer.attention import GaussianAttentionSublayer
from dsan_tf.layers.utils import clone_initializer


def sinusoidal_positions(length, width):
    """Eq. (7)-(8): x_{i,2k} = sin(i / 10000^{2k/D}), x_{i,2k+1} = cos(same); float32
    [T, D] for positions i = 0..T-1 (tensor2tensor counts from 0)."""
    positions = ops.cast(ops.arange(length), "float32")[:, None]
    even = np.arange(0, width, 2, dtype="float32")
    rates = ops.convert_to_tensor(1.0 / np.power(10000.0, even / width))
    angles = positions * rates[None, :]  # [T, ceil(D / 2)]
    # Interleave: sin at 2k, cos at 2k + 1.
    table = ops.reshape(ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1), (length, -1))
    return table[:, :width]


@keras.saving.register_keras_serializable(package="dsan_tf")
class GaussianTransformerEmbedding(keras.layers.Layer):
    """x^(e) = x^(p) + [x^(w) : x^(c)] W_e   (eq. (9)), then dropout.

    The frozen token features [x^(w) : x^(c)] (word vector and max-pooled character
    5-gram vector, eq. (5)-(6)) arrive as one vector per token; W_e has no bias (eq. (9)
    has none) and is the block's only trainable parameter.

    Args:
        model_dim: int, D (d_model, the paper: 120).
        dropout: float.
        kernel_initializer: initializer of W_e.

    Call arguments:
        features: float [B, T, W].
        training: bool.

    Returns:
        float [B, T, D].
    """

    def __init__(self, model_dim, dropout, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.model_dim = model_dim
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, features_shape):
        self.projection = keras.layers.Dense(
            self.model_dim, use_bias=False, name="embedding_projection", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "projection"))
        self.projection.build(features_shape)
        self.output_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, features, training=None):
        projected = self.projection(features)
        positions = sinusoidal_positions(ops.shape(features)[1], self.model_dim)
        embedded = projected + ops.cast(positions, projected.dtype)[None]
        return self.output_dropout(embedded, training=training)

    def compute_output_shape(self, features_shape):
        return tuple(features_shape[:-1]) + (self.model_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({"model_dim": self.model_dim, "dropout": self.dropout,
                       "kernel_initializer": keras.initializers.serialize(
                           self.kernel_initializer)})
        return config


class _Block(keras.layers.Layer):
    """Hyperparameters and config shared by the encoding and interaction blocks."""

    def __init__(self, num_heads, ffn_dim, distance_prior, dropout, layer_norm_epsilon,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.ffn_dim = ffn_dim
        self.distance_prior = distance_prior
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def _attention(self, name, prior, shape):
        layer = GaussianAttentionSublayer(
            self.num_heads, distance_prior=prior, dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon, name=name, dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, name))
        layer.build(shape)
        return layer

    def _feed_forward(self, shape):
        layer = PositionwiseFeedForward(
            self.ffn_dim, layer_norm_epsilon=self.layer_norm_epsilon, dropout=self.dropout,
            initialization="glorot", name="feed_forward", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "feed_forward"))
        layer.build(shape)
        return layer

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads, "ffn_dim": self.ffn_dim,
            "distance_prior": self.distance_prior, "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        })
        return config


@keras.saving.register_keras_serializable(package="dsan_tf")
class GaussianEncodingBlock(_Block):
    """One encoding block: multi-head Gaussian self-attention, then the position-wise FFN
    (eq. (10)-(12)), each as LN(x + Dropout(Sublayer(x))).

    Args:
        num_heads: int, H.
        ffn_dim: int, hidden width of the FFN (eq. (11): W_1 ∈ R^{D×D}, so D).
        distance_prior: one of `PRIORS` ("gaussian_variant": eq. (4)).
        dropout: float, on each sub-layer's output.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of every projection.

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: bool [B, T].
        training: bool.
        return_attention_scores: bool; also return the weights [B, H, T, T].

    Returns:
        float [B, T, D] (and the weights when asked).
    """

    def build(self, inputs_shape):
        self.self_attention = self._attention("self_attention", self.distance_prior,
                                              inputs_shape)
        self.feed_forward = self._feed_forward(inputs_shape)
        self.built = True

    def call(self, inputs, padding_mask, training=None, return_attention_scores=False):
        attended, weights = self.self_attention(inputs, padding_mask, training=training,
                                                return_attention_scores=True)
        outputs = self.feed_forward(attended, training=training)
        return (outputs, weights) if return_attention_scores else outputs

    def compute_output_shape(self, inputs_shape):
        return inputs_shape


@keras.saving.register_keras_serializable(package="dsan_tf")
class InteractionBlock(_Block):
    """One interaction block: Gaussian self-attention, multi-head inter-attention between
    premise and hypothesis, FFN; each sub-layer LN(x + Dropout(Sublayer(x))), one set of
    weights for both sentences ("Interaction Blocks"; implementation paragraph).

    Both sentences attend to the other's self-attention outputs, computed in the same
    block, so the two directions are symmetric.

    Args: as `GaussianEncodingBlock`.

    Call arguments:
        premise: float [B, T1, D]; hypothesis: float [B, T2, D].
        premise_mask: bool [B, T1]; hypothesis_mask: bool [B, T2].
        training: bool.
        return_attention_scores: bool; also return {"premise_self", "hypothesis_self",
            "premise_to_hypothesis" [B, H, T1, T2], "hypothesis_to_premise"}.

    Returns:
        (float [B, T1, D], float [B, T2, D]) (and the weights when asked).
    """

    def build(self, premise_shape, hypothesis_shape=None):
        self.self_attention = self._attention("self_attention", self.distance_prior,
                                              premise_shape)
        self.inter_attention = self._attention("inter_attention", "none", premise_shape)
        self.feed_forward = self._feed_forward(premise_shape)
        self.built = True

    def call(self, premise, hypothesis, premise_mask, hypothesis_mask, training=None,
             return_attention_scores=False):
        weights = {}
        p, weights["premise_self"] = self.self_attention(
            premise, premise_mask, training=training, return_attention_scores=True)
        h, weights["hypothesis_self"] = self.self_attention(
            hypothesis, hypothesis_mask, training=training, return_attention_scores=True)
        p_aligned, weights["premise_to_hypothesis"] = self.inter_attention(
            p, premise_mask, context=h, context_mask=hypothesis_mask, training=training,
            return_attention_scores=True)
        h_aligned, weights["hypothesis_to_premise"] = self.inter_attention(
            h, hypothesis_mask, context=p, context_mask=premise_mask, training=training,
            return_attention_scores=True)
        outputs = (self.feed_forward(p_aligned, training=training),
                   self.feed_forward(h_aligned, training=training))
        return (*outputs, weights) if return_attention_scores else outputs

    def compute_output_shape(self, premise_shape, hypothesis_shape=None):
        return premise_shape, hypothesis_shape


@keras.saving.register_keras_serializable(package="dsan_tf")
class SiameseAggregation(keras.layers.Layer):
    """x̄ = (1/√l_x) Σ_i Dense_4(ReLU(Dense_3([x_i : x̃_i])))   (eq. (13)-(15)): the
    comparison block's aggregation network, applied with one set of weights to each
    sentence; only the l_x real tokens are summed.

    Args:
        model_dim: int, D (W_3 ∈ R^{2D×D}, W_4 ∈ R^{D×D}).
        kernel_initializer: initializer of W_3 and W_4.

    Call arguments:
        encoded: float [B, T, D], the encoding blocks' output x.
        aligned: float [B, T, D], the interaction blocks' output x̃.
        padding_mask: bool [B, T].

    Returns:
        float [B, D].
    """

    def __init__(self, model_dim, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.model_dim = model_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, encoded_shape, aligned_shape=None, padding_mask_shape=None):
        pair_shape = tuple(encoded_shape[:-1]) + (2 * self.model_dim,)
        self.compare_dense = keras.layers.Dense(
            self.model_dim, activation="relu", name="compare", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "compare"))
        self.compare_dense.build(pair_shape)
        self.output_dense = keras.layers.Dense(
            self.model_dim, name="compare_output", dtype=self.dtype_policy,
            kernel_initializer=clone_initializer(self.kernel_initializer, "compare_output"))
        self.output_dense.build(tuple(encoded_shape[:-1]) + (self.model_dim,))
        self.built = True

    def call(self, encoded, aligned, padding_mask):
        compared = self.output_dense(self.compare_dense(ops.concatenate([encoded, aligned], -1)))
        real = ops.cast(padding_mask, compared.dtype)
        total = ops.sum(compared * real[:, :, None], axis=1)
        length = ops.maximum(ops.sum(real, axis=1, keepdims=True), 1.0)
        return total / ops.sqrt(length)

    def compute_output_shape(self, encoded_shape, aligned_shape=None, padding_mask_shape=None):
        return (encoded_shape[0], self.model_dim)

    def get_config(self):
        config = super().get_config()
        config.update({"model_dim": self.model_dim,
                       "kernel_initializer": keras.initializers.serialize(
                           self.kernel_initializer)})
        return config


__all__ = ["GaussianEncodingBlock", "GaussianTransformerEmbedding", "InteractionBlock",
           "SiameseAggregation", "sinusoidal_positions"]
