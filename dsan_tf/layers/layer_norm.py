"""Layer normalisation with a memory-lean gradient (Ba et al., 2016).

Shape legend: ... any leading axes, D the normalised (last) axis.

Keras' `LayerNormalization` is composed of elementwise ops whose gradients keep about
three D-wide tensors per call alive until the backward pass. DSAN has eleven LayerNorms per
sentence and training step, so they were a third of the activation memory; this layer
keeps one (the normalised x̂) and a [..., 1] scale, and computes the same values.
"""

from dsan_tf.common.frameworks import keras, ops


def _sum_to(gradient, shape):
    """`gradient` summed over the axes that `shape` broadcast to: γ [D] over every leading
    axis, or the stacked γ [N, 1, ..., D] of several LayerNorms over all but N and D."""
    extra = len(gradient.shape) - len(shape)
    axes = tuple(range(extra)) + tuple(extra + axis for axis, size in enumerate(shape)
                                       if size == 1)
    return ops.reshape(ops.sum(gradient, axis=axes), shape) if axes else gradient


def _layer_norm(x, gamma, beta, epsilon):
    """γ ⊙ (x - μ) / √(σ² + ε) + β over the last axis, float32, with an explicit gradient.
    γ and β are [D], or [N, 1, ..., D] for N LayerNorms applied at once to x [N, ..., D]."""

    @ops.custom_gradient
    def normalize(x, gamma, beta):
        centered = x - ops.mean(x, axis=-1, keepdims=True)
        inverse_std = ops.rsqrt(ops.mean(ops.square(centered), axis=-1, keepdims=True) + epsilon)
        normalized = centered * inverse_std

        def grad(*args, upstream=None):
            # Keras passes the upstream gradient positionally or by keyword, by backend.
            if upstream is None:
                (upstream,) = args
            d_gamma = _sum_to(upstream * normalized, gamma.shape)
            d_beta = _sum_to(upstream, beta.shape)
            scaled = upstream * gamma
            d_x = inverse_std * (
                scaled - ops.mean(scaled, axis=-1, keepdims=True)
                - normalized * ops.mean(scaled * normalized, axis=-1, keepdims=True))
            return d_x, d_gamma, d_beta

        return normalized * gamma + beta, grad

    return normalize(x, gamma, beta)


@keras.saving.register_keras_serializable(package="dsan_tf")
class LayerNorm(keras.layers.Layer):
    """LayerNorm over the last axis: γ ⊙ (x - μ) / √(σ² + ε) + β, computed in float32.

    Args:
        epsilon: float, ε.

    Call arguments:
        inputs: float [..., D].

    Returns:
        float [..., D] in the layer's compute dtype.

    Examples:
    ```python
    import numpy as np
    from dsan_tf.layers import LayerNorm

    x = np.random.rand(2, 5, 8).astype("float32")
    normalised = LayerNorm()(x)  # [2, 5, 8], each position mean 0, variance 1
    ```
    """

    def __init__(self, epsilon=1e-5, **kwargs):
        # γ and β are read in float32 whatever the policy (as Keras' LayerNormalization).
        super().__init__(autocast=False, **kwargs)
        self.epsilon = epsilon

    def build(self, inputs_shape):
        width = (inputs_shape[-1],)
        self.gamma = self.add_weight(name="gamma", shape=width, initializer="ones")
        self.beta = self.add_weight(name="beta", shape=width, initializer="zeros")
        self.built = True

    def call(self, inputs):
        outputs = _layer_norm(ops.cast(inputs, "float32"), ops.cast(self.gamma, "float32"),
                              ops.cast(self.beta, "float32"), self.epsilon)
        return ops.cast(outputs, self.compute_dtype)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config["epsilon"] = self.epsilon
        return config
