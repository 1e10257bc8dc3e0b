"""N sublayers of one configuration computed as one: DSAN's forward and backward blocks
(Im & Cho, 2017, Figure 2) run the same function of separate weights on the same words, so
the encoder computes them together (`DSANBlock.call` with `partners`), their weights stacked on a
leading axis at run time and their activations [N, B, T, ...]. A compiled step then holds
the block's ops once, not once per direction (a GPU's step is bound by the size
of its program); each layer keeps its own variables, so files and checkpoints are those of
separate layers. Dropout draws the N layers' masks at once.

Shape legend: N stacked layers, B batch, T tokens, D input width, E output width.
"""

from dsan_tf.common.frameworks import ops

from dsan_tf.layers.layer_norm import _layer_norm

def weights(layers, name, dtype):
    """The variables `name` of `layers`, read in `dtype`: [N, ...]."""
    return ops.stack([ops.cast(getattr(layer, name).value, dtype) for layer in layers])


def dense(layers, inputs, shared=False):
    """N `keras.layers.Dense` layers of one configuration, each on its own inputs.

    Args:
        layers: N built Dense layers (same units, bias and activation).
        inputs: float [N, B, T, D], or [B, T, D] read by all N (`shared=True`): then one
            matmul with the kernels side by side.

    Returns:
        float [N, B, T, E] in the layers' compute dtype.
    """
    first = layers[0]
    dtype = first.compute_dtype
    inputs = ops.cast(inputs, dtype)
    if len(layers) == 1:  # one layer: the matmul of Dense's own call
        outputs = ops.matmul(inputs if shared else inputs[0],
                             ops.cast(first.kernel.value, dtype))[None]
    elif shared:
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        kernel = ops.concatenate([ops.cast(layer.kernel.value, dtype)
                                  for layer in layers], axis=-1)
        outputs = ops.matmul(inputs, kernel)
        outputs = ops.reshape(outputs, (batch, length, len(layers), first.units))
        outputs = ops.transpose(outputs, (2, 0, 1, 3))
    else:
        shape = ops.shape(inputs)
        outputs = ops.matmul(ops.reshape(inputs, (len(layers), -1, inputs.shape[-1])),
                             weights(layers, "kernel", dtype))
        outputs = ops.reshape(outputs, (len(layers), shape[1], shape[2], first.units))
    if first.use_bias:
        outputs = outputs + weights(layers, "bias", dtype)[:, None, None, :]
    return first.activation(outputs) if first.activation is not None else outputs


def layer_norm(layers, inputs):
    """N `LayerNorm` layers, each on its slice of inputs [N, ..., D]; float32 inside,
    returned in the layers' compute dtype."""
    first = layers[0]
    shape = (len(layers),) + (1,) * (len(inputs.shape) - 2) + (inputs.shape[-1],)
    gamma = ops.reshape(weights(layers, "gamma", "float32"), shape)
    beta = ops.reshape(weights(layers, "beta", "float32"), shape)
    outputs = _layer_norm(ops.cast(inputs, "float32"), gamma, beta, first.epsilon)
    return ops.cast(outputs, first.compute_dtype)


def dropout(layers, inputs, training=None):
    """N `keras.layers.Dropout` layers of one rate on inputs [N, ...], as one draw of the
    first layer's seed generator: one mask op for all N (slicing per layer, so that each
    drew its own, cost TensorFlow's CPU step 5% at d_e 50)."""
    return layers[0](inputs, training=training)
