"""Sentence pooling: multi-dimensional source2token attention (Im & Cho, 2017, Section 4.2.5,
eq. 14-16) and max pooling, both blind to padding.

Shape legend: B batch, T tokens, D width (2·d_e for the DSAN encoder output U).
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.common.choices import MAX_POOL_PADDINGS
from dsan_tf.layers import masks
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import initialized_dense


def _token_mask(inputs, padding_mask):
    """bool [B, T, 1]: True on real tokens (all True without a padding mask)."""
    if padding_mask is None:
        return ops.ones_like(inputs[:, :, :1], dtype="bool")
    return ops.cast(padding_mask, "bool")[:, :, None]


@keras.saving.register_keras_serializable(package="dsan_tf")
class Source2TokenAttention(keras.layers.Layer):
    """Multi-dimensional source2token attention.

    f(u_i) = LN(ELU(LN(u_i W1 + b1)) W2 + b2)        (eq. 14)
    a[:, d] = softmax over tokens of f(u)[:, d]       (eq. 15, one softmax per dimension)
    s = Σ_i a_i ⊙ u_i                                  (eq. 16)

    Padded tokens get weight exactly 0; an all-padding sentence pools to 0.

    Args:
        layer_norm_epsilon: float.
        kernel_initializer: initializer of W1 and W2.
        shared_norm: one LayerNorm (γ, β) for both projections, SAN4NLI's (eq. 14 does
            not say; the default is one each).
        initialization: `"glorot"` or `"san4nli"` (`dense_initializers`).

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T].
        return_attention_scores: bool; also return the weights [B, T, D].

    Returns:
        float [B, D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import Source2TokenAttention

    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    pooling = Source2TokenAttention(layer_norm_epsilon=1e-5, shared_norm=False,
                                    initialization="glorot")
    vector = pooling(x, padding_mask=mask)  # [2, 8]
    ```
    """

    def __init__(self, layer_norm_epsilon, shared_norm, initialization,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.shared_norm = shared_norm
        self.initialization = initialization

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        common = {"dtype": self.dtype_policy}

        def built(layer):  # each sublayer is built where it is made: a shared one is reused
            layer.build(inputs_shape)
            return layer

        def norm(name):
            return built(LayerNorm(epsilon=self.layer_norm_epsilon, name=name, **common))

        self.hidden_dense = built(initialized_dense(width, "s2t_hidden", self, width))
        self.hidden_norm = norm("s2t_norm" if self.shared_norm else "s2t_hidden_norm")
        self.score_dense = built(initialized_dense(width, "s2t_score", self, width))
        self.score_norm = self.hidden_norm if self.shared_norm else norm("s2t_score_norm")
        self.built = True

    def call(self, inputs, padding_mask=None, return_attention_scores=False):
        hidden = ops.elu(self.hidden_norm(self.hidden_dense(inputs)))
        scores = ops.cast(self.score_norm(self.score_dense(hidden)), "float32")
        token_mask = _token_mask(inputs, padding_mask)
        scores = ops.where(token_mask, scores, masks.LARGE_NEGATIVE)
        weights = masks.softmax(scores, axis=1) * ops.cast(token_mask, "float32")
        pooled = ops.sum(ops.cast(weights, inputs.dtype) * inputs, axis=1)
        if return_attention_scores:
            return pooled, weights
        return pooled

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "shared_norm": self.shared_norm,
            "initialization": self.initialization,
        })
        return config


@keras.saving.register_keras_serializable(package="dsan_tf")
class MaskedMaxPooling(keras.layers.Layer):
    """Max over real tokens, per dimension.

    Padding is excluded (never filled with 0, which would turn the max of a negative
    feature into 0); an all-padding sentence pools to 0. `padding="zeros"` is SAN4NLI's
    reading instead: the max over the whole padded sentence, padding counted as 0.

    Args:
        padding: `"masked"` (DSAN) or `"zeros"` (SAN4NLI).

    Call arguments:
        inputs: float [B, T, D].
        padding_mask: optional bool [B, T].

    Returns:
        float [B, D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import MaskedMaxPooling

    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    vector = MaskedMaxPooling(padding="masked")(x, padding_mask=mask)  # [2, 8]: padding
    # is never the max
    ```
    """

    def __init__(self, padding, **kwargs):
        super().__init__(**kwargs)
        if padding not in MAX_POOL_PADDINGS:
            raise ValueError(f"padding must be one of {MAX_POOL_PADDINGS}, got {padding!r}.")
        self.padding = padding
        # After a layer that attaches Keras' mask (an LSTM given one): it is read here as
        # `padding_mask`, and the pooled vector has no time axis to carry it on. Without
        # this, Keras warned that the layer "will destroy the mask information".
        self.supports_masking = True

    def call(self, inputs, padding_mask=None):
        token_mask = _token_mask(inputs, padding_mask)
        if self.padding == "zeros":
            return ops.max(inputs * ops.cast(token_mask, inputs.dtype), axis=1)
        # In float32 so that the fill value is below any half-precision activation.
        values = ops.where(token_mask, ops.cast(inputs, "float32"), masks.LARGE_NEGATIVE)
        pooled = ops.where(ops.any(token_mask, axis=1), ops.max(values, axis=1), 0.0)
        return ops.cast(pooled, inputs.dtype)

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])

    def compute_mask(self, inputs, mask=None):
        return None  # one vector per sentence: no token left to mask

    def get_config(self):
        return dict(super().get_config(), padding=self.padding)
