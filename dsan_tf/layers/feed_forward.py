"""Position-wise feed-forward network with residual and LayerNorm (Im & Cho, 2017, Section
4.2.4: eq. 13 is the FFN; the residual and LayerNorm are Figure 2's and Section 5.5's).

Shape legend: B batch, T tokens, D width, F hidden width (d_ff).
"""

from dsan_tf.common.frameworks import keras

from dsan_tf.layers import stacking
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

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import PositionwiseFeedForward

    x = np.random.rand(2, 5, 8).astype("float32")
    feed_forward = PositionwiseFeedForward(ffn_dim=16, layer_norm_epsilon=1e-5,
                                           dropout=0.0, initialization="glorot")
    outputs = feed_forward(x)  # [2, 5, 8]
    ```
    """

    def __init__(self, ffn_dim, layer_norm_epsilon, dropout, initialization,
                 kernel_initializer="glorot_uniform", **kwargs):
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

    def call(self, inputs, training=None, return_hidden=False, partners=()):
        """Eq. 13 for this layer and its `partners` (other built layers of one
        configuration), each on its slice of the inputs, as one pass of ops, their weights
        stacked at run time (`dsan_tf.layers.stacking`).

        Args:
            inputs: float [B, T, D]; with partners [N, B, T, D].
            training: bool (dropout).
            return_hidden: also return the ReLU activations [B, T, F].
            partners: layers computed with this one.

        Returns:
            float [B, T, D] (and the activations), each with a leading axis N = 1 +
            len(partners), in the order [self, *partners], when partners are given.
        """
        layers = [self, *partners]
        stacked = inputs if partners else inputs[None]
        hidden = stacking.dense([layer.hidden_dense for layer in layers], stacked)
        update = stacking.dense([layer.output_dense for layer in layers], hidden)
        update = stacking.dropout([layer.output_dropout for layer in layers], update, training)
        outputs = stacking.layer_norm([layer.output_norm for layer in layers], stacked + update)
        if not partners:
            outputs, hidden = outputs[0], hidden[0]
        return (outputs, hidden) if return_hidden else outputs

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
