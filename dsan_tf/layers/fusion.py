"""Fusion gate (Im & Cho, 2017, Section 4.2.3, eq. 10-12; its LayerNorm and dropout are
Section 5.2's).

Shape legend: B batch, T tokens, D width.
"""

from dsan_tf.common.frameworks import keras, ops

from dsan_tf.common.choices import FUSIONS
from dsan_tf.layers import stacking
from dsan_tf.layers.layer_norm import LayerNorm
from dsan_tf.layers.utils import initialized_dense


@keras.saving.register_keras_serializable(package="dsan_tf")
class FusionGate(keras.layers.Layer):
    """Gate between a block's input S and its attention output H.

    S^F = LN(S W^S), H^F = LN(H W^H)                      (eq. 11)
    F = σ(dropout(S^F + H^F + b^F))                        (eq. 12)
    output = F ⊙ S^F + (1 - F) ⊙ H^F   (`fusion="projected"`, the paper)
    output = F ⊙ S + (1 - F) ⊙ H       (`fusion="raw"`, DiSAN; same parameters)

    W^S and W^H have no bias: b^F is the gate's only bias (docs/FIDELITY.md). SAN4NLI's
    gate (`shared_norm=True, output_norm=True`) uses one LN for S^F, H^F and the output,
    LN(F ⊙ S^F + (1 - F) ⊙ H^F).

    Args:
        fusion: `"projected"` or `"raw"`.
        dropout: float, dropout rate on S^F + H^F + b^F.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of W^S and W^H.
        shared_norm: one LayerNorm (γ, β) for S^F and H^F (and the output) instead of one
            each.
        output_norm: LayerNorm on the output (eq. 12 has none).
        initialization: `"glorot"` or `"san4nli"` (W^S, W^H Xavier-normal, see
            `dense_initializers`).

    Call arguments:
        source: float [B, T, D], S (the block input).
        context: float [B, T, D], H (the attention output).
        training: bool.

    Returns:
        float [B, T, D]; with `return_gate=True` also F [B, T, D].

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import FusionGate

    source = np.random.rand(2, 5, 8).astype("float32")
    context = np.random.rand(2, 5, 8).astype("float32")
    gate = FusionGate(fusion="projected", dropout=0.1, layer_norm_epsilon=1e-5,
                      shared_norm=False, output_norm=False, initialization="glorot")
    fused = gate(source, context)  # [2, 5, 8]
    ```
    """

    def __init__(self, fusion, dropout, layer_norm_epsilon, shared_norm, output_norm,
                 initialization, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        self.fusion = fusion
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.shared_norm = shared_norm
        self.output_norm = output_norm
        self.initialization = initialization

    def build(self, source_shape):
        width = source_shape[-1]
        common = {"dtype": self.dtype_policy}
        xavier_std = (2.0 / (width + width)) ** 0.5  # SAN4NLI's xavier_normal_ of [D, D]

        def built(layer):  # each sublayer is built where it is made: a shared one is reused
            layer.build(source_shape)
            return layer

        def projection(name):
            return built(initialized_dense(width, name, self, width, use_bias=False,
                                           normal_std=xavier_std))

        def norm(name):
            return built(LayerNorm(epsilon=self.layer_norm_epsilon, name=name, **common))

        self.source_dense = projection("source_projection")
        self.context_dense = projection("context_projection")
        if self.shared_norm:
            self.source_norm = self.context_norm = norm("projection_norm")
        else:
            self.source_norm = norm("source_projection_norm")
            self.context_norm = norm("context_projection_norm")
        self.fused_norm = None
        if self.output_norm:
            self.fused_norm = self.source_norm if self.shared_norm else norm("output_norm")
        self.gate_bias = self.add_weight(
            shape=(width,), initializer="zeros", name="gate_bias")
        self.gate_dropout = keras.layers.Dropout(self.dropout, **common)
        self.built = True

    def call(self, source, context, training=None, return_gate=False, partners=()):
        """Eq. 11-12 for this gate and its `partners` (other built gates of one
        configuration) as one pass of ops, their weights stacked at run time
        (`dsan_tf.layers.stacking`).

        Args:
            source: float [B, T, D], S, the same for every gate.
            context: float [B, T, D], H; with partners [N, B, T, D], each gate's H.
            training: bool (dropout).
            return_gate: also return F.
            partners: gates computed with this one.

        Returns:
            float [B, T, D] (and F [B, T, D]), each with a leading axis N = 1 +
            len(partners), in the order [self, *partners], when partners are given.
        """
        layers = [self, *partners]
        if not partners:
            context = context[None]
        first = layers[0]

        def projected(dense, norm, inputs, shared):
            return stacking.layer_norm([getattr(layer, norm) for layer in layers],
                                       stacking.dense([getattr(layer, dense) for layer in layers],
                                                      inputs, shared=shared))

        source_f = projected("source_dense", "source_norm", source, True)
        context_f = projected("context_dense", "context_norm", context, False)
        gate_bias = stacking.weights(layers, "gate_bias", source_f.dtype)
        pre_gate = source_f + context_f + gate_bias[:, None, None, :]
        gate = ops.sigmoid(stacking.dropout([layer.gate_dropout for layer in layers], pre_gate,
                                            training))
        if first.fusion == "raw":
            source_f, context_f = ops.cast(source, gate.dtype)[None], context
        outputs = gate * source_f + (1.0 - gate) * context_f
        if first.fused_norm is not None:
            outputs = stacking.layer_norm([layer.fused_norm for layer in layers], outputs)
        if not partners:
            outputs, gate = outputs[0], gate[0]
        return (outputs, gate) if return_gate else outputs

    def compute_output_shape(self, source_shape):
        return source_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "fusion": self.fusion,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "shared_norm": self.shared_norm,
            "output_norm": self.output_norm,
            "initialization": self.initialization,
        })
        return config
