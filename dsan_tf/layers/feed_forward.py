"""Position-wise feed-forward network with residual and LayerNorm (Im & Cho, 2017, Section
4.2.4: eq. 13 is the FFN; the residual and LayerNorm are Figure 2's and Section 5.5's).

Shape legend: B batch, T tokens, D width, F hidden width (d_ff).
"""

import keras

from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import initialized_dense


@keras.saving.register_keras_serializable(package="dsan_tf")
class PositionwiseFeedForward(keras.layers.Layer):
    """output = LN(x + Dropout(ReLU(x W1 + b1) W2 + b2))   (eq. 13 inside; post-LN,
    Section 5.5). DSAN has no dropout here; the Gaussian Transformer drops every sub-layer's
    output (its eq. (10)-(12) with the implementation paragraph).

    Args:
        ffn_dim: int, F (the paper: 4·D = 1200).
        layer_norm_epsilon: float.
        dropout: float, on the FFN's output before the residual (DSAN: 0).
        kernel_initializer: initializer of W1 and W2.
        initialization: `"glorot"` or `"san4nli"` (`dense_initializers`).

    Call arguments:
        inputs: float [B, T, D].
        training: bool.
        return_hidden: bool; also return the ReLU activations [B, T, F] (Figure 10).

    Returns:
        float [B, T, D].
    """

    def __init__(self, ffn_dim, layer_norm_epsilon=1e-5,
                 kernel_initializer="glorot_uniform", dropout=0.0, initialization="glorot",
                 **kwargs):
        super().__init__(**kwargs)
        self.ffn_dim = ffn_dim
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.initialization = initialization

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        self.hidden_dense = initialized_dense(self.ffn_dim, "ffn_hidden", self, width,
                                              activation="relu")
        self.hidden_dense.build(inputs_shape)
        self.output_dense = initialized_dense(width, "ffn_output", self, self.ffn_dim)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.ffn_dim,))
        self.output_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, name="ffn_norm", dtype=self.dtype_policy)
        self.output_norm.build(inputs_shape)
        self.output_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, inputs, training=None, return_hidden=False):
        hidden = self.hidden_dense(inputs)
        outputs = self.output_norm(
            inputs + self.output_dropout(self.output_dense(hidden), training=training))
        if return_hidden:
            return outputs, hidden
        return outputs

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "ffn_dim": self.ffn_dim,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "initialization": self.initialization,
        })
        return config
